"""A served HTTP endpoint's graceful stop on SIGTERM and SIGINT, on every runtime.

Theory of operation
-------------------
``run_http`` (and ``serve-example --transport http``) serve until a stop signal --
``SIGTERM``, which Docker, systemd and Kubernetes send, or ``SIGINT`` (Ctrl-C) -- and then
stop in order:

1. stop accepting new connections: the listener closes, so a new connection is refused
   (on threads, an accept thread parked at ``max_connections`` accepts nothing more, its
   listener closing at step 3);
2. wait, at most ``shutdown_timeout`` seconds (:data:`DEFAULT_SHUTDOWN_TIMEOUT`), until no
   request is in flight -- every session's handlers have answered -- and their answers
   are written; a second signal ends the wait at once;
3. leave the ``start_http`` block as any caller does: the listener closes, the connections
   that are left -- SSE streams included, which a client resumes elsewhere with
   ``Last-Event-ID`` when the stores are shared -- are closed, handlers still running are
   cancelled (their callers see the connection end), and a worker of shared stores says
   "gone" on the bus, a clean leave rather than a death the others must time out.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds the stop waits for requests in flight before cancelling them.
DEFAULT_SHUTDOWN_TIMEOUT = 10.0
#: The signals that stop a served endpoint.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: How often the stop looks whether the requests in flight are done.
_POLL = 0.02


def in_flight(service: Any) -> int:
    """Requests the service's sessions are handling (received, not yet answered)."""
    return sum(len(logic.conn._incoming) for logic in service._logics())


def only_interrupts(group: BaseExceptionGroup[Any]) -> bool:
    """Whether a (nested) exception group holds nothing but ``KeyboardInterrupt`` -- a
    Ctrl-C that trio delivered inside a nursery."""
    _interrupts, rest = group.split(KeyboardInterrupt)
    return rest is None


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def serve_until_signal(runtime: str, adapter: Any, server: Any, host: str, port: int, *,
                       on_ready: Callable[[Any], Any] | None = None,
                       shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
                       **options: Any) -> int:
    """Serve ``server`` with ``adapter`` (a runtime's module) until a stop signal, then stop
    gracefully (module docstring); the signal's number, or ``SIGINT`` for a Ctrl-C that
    came before the handlers were in place."""
    try:
        if runtime == "asyncio":
            import asyncio  # lazy: that runtime only: the others never load asyncio

            return asyncio.run(_asyncio(adapter, server, host, port, on_ready,
                                        shutdown_timeout, options))
        if runtime == "trio":
            import trio  # lazy: trio is optional

            return int(trio.run(_trio, adapter, server, host, port, on_ready,
                                shutdown_timeout, options))
        return _threads(adapter, server, host, port, on_ready, shutdown_timeout, options)
    except KeyboardInterrupt:
        return signal.SIGINT
    except BaseExceptionGroup as group:
        if only_interrupts(group):
            return signal.SIGINT
        raise


async def _asyncio(adapter: Any, server: Any, host: str, port: int,
                   on_ready: Callable[[Any], Any] | None, timeout: float,
                   options: dict[str, Any]) -> int:
    import asyncio  # lazy: that runtime only: the others never load asyncio

    loop = asyncio.get_running_loop()
    stop, force = asyncio.Event(), asyncio.Event()
    got: list[int] = []

    def on_signal(signum: int) -> None:
        got.append(signum)
        (force if stop.is_set() else stop).set()

    handled = _main_thread()
    if handled:
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, on_signal, signum)
    try:
        async with adapter.start_http(server, host, port, **options) as service:
            if on_ready is not None:
                on_ready(service)
            await stop.wait()
            listener = service._listener
            if listener is not None:
                listener.close()  # stop accepting
            deadline = loop.time() + timeout

            def busy() -> bool:
                return bool(in_flight(service)) or any(
                    s.transport is not None and s.transport.get_write_buffer_size()
                    for s in list(service._sockets.values()))

            while busy() and loop.time() < deadline and not force.is_set():
                await asyncio.sleep(_POLL)
    finally:
        if handled:
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)
    return got[0] if got else signal.SIGINT


async def _trio(adapter: Any, server: Any, host: str, port: int,
                on_ready: Callable[[Any], Any] | None, timeout: float,
                options: dict[str, Any]) -> int:
    import trio  # lazy: trio is optional

    got: list[int] = []
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with adapter.start_http(server, host, port, **options) as service:
            if on_ready is not None:
                on_ready(service)
            async for signum in signals:
                got.append(signum)
                break
            await service.stop_accepting()
            async with trio.open_nursery() as nursery:

                async def second_signal() -> None:
                    async for _ in signals:
                        nursery.cancel_scope.cancel()  # a second signal: stop waiting
                        return

                nursery.start_soon(second_signal)
                with trio.move_on_after(timeout):
                    while in_flight(service):
                        await trio.sleep(_POLL)
                    await trio.sleep(_POLL)  # the last answers' writes
                nursery.cancel_scope.cancel()
    return got[0] if got else signal.SIGINT


def _threads(adapter: Any, server: Any, host: str, port: int,
             on_ready: Callable[[Any], Any] | None, timeout: float,
             options: dict[str, Any]) -> int:
    stop, force = threading.Event(), threading.Event()
    got: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        got.append(signum)
        (force if stop.is_set() else stop).set()

    previous: dict[int, Any] = {}
    if _main_thread():
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, on_signal)
    try:
        options.setdefault("shutdown_timeout", timeout)
        with adapter.start_http(server, host, port, **options) as service:
            if on_ready is not None:
                on_ready(service)
            while not stop.wait(0.5 if previous else None):
                pass
            service.stop_accepting()
            deadline = time.monotonic() + timeout
            while in_flight(service) and time.monotonic() < deadline and not force.is_set():
                time.sleep(_POLL)
            time.sleep(_POLL)  # the last answers' writes
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return got[0] if got else signal.SIGINT
