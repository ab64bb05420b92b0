"""The high-level client's pump, public for embedders who run their own event loop.

Theory of operation
-------------------
Every runtime's client is the same runtime-free logic (``ClientLogic``: the connect and era
probe, the call bookkeeping, answering the server's requests with callbacks, the human-wait
clock, keepalive, capabilities) driven by a small amount of glue: something that writes
bytes, tells the time, and wakes the logic at its next deadline. :class:`ClientPump` is
that logic with the glue handed in as plain functions instead of a runtime, so a
``selectors`` loop, a GUI toolkit's loop or a test can drive it:

* give it ``write(data)`` (send bytes to the server) and ``now()`` (a monotonic clock);
* hand it what the server sends with :meth:`~ClientPump.feed` (``b""`` at end of file);
* call :meth:`~ClientPump.on_timer` once :attr:`~ClientPump.deadline` has passed (after
  every call into the pump, ``deadline`` is the next time it needs waking, or None);
* start with :meth:`~ClientPump.connect`, make requests with :meth:`~ClientPump.send`, and
  look at the :class:`PendingCall` each returns.

The server's requests (elicitation, sampling, roots) are answered at once, on the loop, by
the callbacks given (plain functions: they must not block for long, or the loop stalls);
a stateless-era ``input_required`` is answered the same way and the call goes on under the
retry. Nothing here starts threads or reads clocks: the pump does only what it is told.
For the core alone (no callbacks, no call objects), see ``docs/call-order.rst``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp_sansio import ClientConnection, Era, InputRequired, Request, RequestId
from mcp_sansio.app.errors import Call, McpError, outcome
from mcp_sansio.app.keepalive import DEFAULT_MAX_MISSED
from mcp_sansio.app.session import DEFAULT, Answering, ClientLogic, default_client_info

__all__ = ["ClientPump", "PendingCall"]


class PendingCall:
    """A request made with :meth:`ClientPump.send`: :attr:`done` once it has ended,
    then :meth:`result` gives its result or raises what its end means."""

    def __init__(self, pump: ClientPump, call: Call) -> None:
        self._pump = pump
        self._call = call

    @property
    def done(self) -> bool:
        """Whether the request has ended (an ``input_required`` answer is not an end: the
        callbacks answer it and the retry goes out)."""
        call = self._call
        while isinstance(call.event, InputRequired):
            answers = {key: self._pump._input_callback(method)(params)
                       for key, method, params in self._pump._input_items(call.event)}
            call = self._call = self._pump._retry_call(call, answers)
        return call.done

    @property
    def request_id(self) -> RequestId:
        """The JSON-RPC id of the request (of the latest retry, in the stateless era)."""
        return self._call.request_id

    def result(self) -> dict[str, Any]:
        """The result, or the exception (``McpError``, ``RequestTimeout``,
        ``ConnectionClosedError`` ...: :mod:`mcp_sansio.adapters.errors`)."""
        if not self.done:
            raise RuntimeError(f"{self._call.method} has not ended yet")
        return outcome(self._call, self._pump._closed_detail())


class ClientPump(ClientLogic):
    """The client logic on your loop (see the module docstring).

    :param write: sends bytes to the server (e.g. the child's stdin).
    :param now: the current time in seconds, monotonic (e.g. :func:`time.monotonic`).
    :param sampling, elicitation, roots, on_notification, on_log: as for ``connect_stdio``
        (plain functions here).
    :param capabilities, keepalive, keepalive_misses: as for ``connect_stdio``.
    :param connection_options: for :class:`~mcp_sansio.ClientConnection` (``versions``,
        ``request_timeout``, ``info`` ...).
    """

    def __init__(
        self, *, write: Callable[[bytes], None], now: Callable[[], float],
        sampling: Callable[[dict[str, Any]], Any] | None = None,
        elicitation: Callable[[dict[str, Any]], Any] | None = None,
        roots: Callable[[dict[str, Any]], Any] | list[dict[str, Any]] | None = None,
        on_notification: Callable[..., Any] | None = None,
        on_log: Callable[[dict[str, Any]], Any] | None = None,
        capabilities: Mapping[str, Any] | None = None, keepalive: float | None = None,
        keepalive_misses: int = DEFAULT_MAX_MISSED, **connection_options: Any,
    ) -> None:
        info = connection_options.pop("info", None) or default_client_info()
        conn = ClientConnection(
            info=info, capabilities=self._capabilities_for(sampling, elicitation, roots),
            **connection_options)
        self._write_fn = write
        self._now_fn = now
        #: When the pump next needs :meth:`on_timer` (seconds, on ``now``'s clock), or None.
        self.deadline: float | None = None
        super().__init__(conn, sampling=sampling, elicitation=elicitation, roots=roots,
                         on_notification=on_notification, on_log=on_log,
                         capabilities=capabilities or {}, keepalive=keepalive,
                         keepalive_misses=keepalive_misses)

    # -- the glue, from the functions handed in ------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._write_fn(data)

    def _now(self) -> float:
        return self._now_fn()

    def _arm(self, deadline: float | None) -> None:
        self.deadline = deadline

    def _spawn_incoming(self, request: Request) -> None:
        """Answer the server's request now, with the callbacks (handshake era)."""
        with Answering(self, request) as answer:
            answer.value = self._input_callback(request.method)(request.params or {})
            if not isinstance(answer.value, dict):
                raise McpError(-32603, "Internal error")  # e.g. an async callback

    def _cancel_incoming(self, request_id: RequestId) -> None:
        return None  # answered synchronously: nothing still runs

    # -- what the embedder calls ------------------------------------------------------------

    def connect(self, *, era: Era | None = None) -> None:
        """Start the connect (the era probe, or ``initialize``); it has finished when
        :attr:`initialized` (or :attr:`closed`) is set."""
        self._start_connect(era)

    def send(self, method: str, params: Mapping[str, Any] | None = None, *,
             timeout: Any = DEFAULT, max_total: Any = DEFAULT) -> PendingCall:
        """Send a request; ``timeout`` / ``max_total`` as for ``Client.request`` (left
        out: the connection's defaults; None: no limit)."""
        return PendingCall(self, self._start_call(method, params, timeout=timeout,
                                                  max_total=max_total))
