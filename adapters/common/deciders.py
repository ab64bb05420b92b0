"""Answering the decisions parked exchanges wait on, for each runtime's HTTP server.

Theory of operation
-------------------
The sans-IO HTTP server parks an exchange that waits on an asynchronous decision and hands
out a :class:`~mcp_sansio.http._park.DecisionNeeded` (``mcp_sansio/http/_park.py``). Each
runtime's ``start_http`` sets the server's ``on_decision_needed`` to one of the functions
made here, which answers the question off the server's path and feeds the answer back with
:meth:`~mcp_sansio.http.HTTPServer.decide`, then runs the service's pump so the resumed
exchange is written:

* **asyncio**: a task per question (:func:`asyncio_decider`), the request made with the
  asyncio carrier (``auth.flow.fetch``);
* **trio**: a task in the service's nursery (:func:`trio_decider`), the request made by the
  blocking carrier in a worker thread (``trio.to_thread``), as trio's OAuth client does;
* **threads**: a short-lived thread per question (:func:`thread_decider`), feeding the
  answer under the service's lock. A connection has at most one parked exchange (the server
  reads nothing more from it meanwhile), so these threads are bounded by the service's
  ``max_connections``.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from mcp_sansio.auth import VerificationPending
from mcp_sansio.http._park import DecisionNeeded

from ..auth.flow import fetch, fetch_sync

if TYPE_CHECKING:
    import trio

    from mcp_sansio.http import HTTPServer

__all__ = ["answer_blocking", "answer_async", "asyncio_decider", "thread_decider",
           "trio_decider"]

log = logging.getLogger("mcp_sansio.http")


# -- what a decider needs of its service ----------------------------------------------------------
# The HTTP service modules import this one (their start_http sets a decider), so what the
# deciders use of a service is written here as protocols rather than imported back.


class _Service(Protocol):
    @property
    def http(self) -> HTTPServer: ...

    def _work_failed(self) -> None: ...


class AsyncioService(_Service, Protocol):
    """What :func:`asyncio_decider` uses of the asyncio HTTP service."""

    def _safe_pump(self) -> None: ...


class TrioService(_Service, Protocol):
    """What :func:`trio_decider` uses of the trio HTTP service."""

    @property
    def _nursery(self) -> trio.Nursery | None: ...

    def _safe_wake(self) -> None: ...


class ThreadService(_Service, Protocol):
    """What :func:`thread_decider` uses of the threading HTTP service."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def _closed(self) -> bool: ...

    def _safe_pump(self) -> None: ...


def _failed(question: VerificationPending, exc: Exception) -> None:
    # The URL without its query, never the body (it holds the token).
    request = question.request
    log.warning("%s: %s %s failed: %s", question, request.method,
                request.url.split("?", 1)[0], exc)


def _unknown(question: Any) -> TypeError:
    return TypeError(f"no way to answer a {type(question).__name__}")


async def answer_async(question: Any, timeout: float) -> Any:
    """The answer to ``question`` on asyncio: a value, or the exception that stopped it."""
    if not isinstance(question, VerificationPending):
        return _unknown(question)
    try:
        return await fetch(question.request, timeout=timeout)
    except Exception as exc:  # the answer is that it failed: the server decides (503)
        _failed(question, exc)
        return exc


def answer_blocking(question: Any, timeout: float) -> Any:
    """The answer to ``question``, blocking (threads; trio's worker threads)."""
    if not isinstance(question, VerificationPending):
        return _unknown(question)
    try:
        return fetch_sync(question.request, timeout=timeout)
    except Exception as exc:
        _failed(question, exc)
        return exc


def _decide(service: AsyncioService | TrioService | ThreadService, need: DecisionNeeded,
            answer: Any, now: float) -> None:
    """Hand the user's ``answer`` to the HTTP server (the service's pump runs next). A
    failure there is a bug: that channel was failed (500); logged, the server goes on."""
    try:
        service.http.decide(need.handle, answer, now=now, wall_time=time.time())
    except Exception:
        service._work_failed()


def asyncio_decider(service: AsyncioService) -> Callable[[DecisionNeeded], None]:
    """``on_decision_needed`` for the asyncio HTTP service."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()
    http = service.http

    async def run(need: DecisionNeeded) -> None:
        answer = await answer_async(need.question, http.decision_timeout)
        _decide(service, need, answer, loop.time())
        service._safe_pump()

    def needed(need: DecisionNeeded) -> None:
        task = loop.create_task(run(need))
        tasks.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(tasks.discard)

    return needed


def trio_decider(service: TrioService) -> Callable[[DecisionNeeded], None]:
    """``on_decision_needed`` for the trio HTTP service (called inside its tasks)."""
    import trio  # lazy: trio is optional

    http = service.http

    async def run(need: DecisionNeeded) -> None:
        answer = await trio.to_thread.run_sync(
            functools.partial(answer_blocking, need.question, http.decision_timeout),
            abandon_on_cancel=True)
        _decide(service, need, answer, trio.current_time())
        service._safe_wake()

    def needed(need: DecisionNeeded) -> None:
        nursery = service._nursery
        assert nursery is not None  # set before the first connection is accepted
        nursery.start_soon(run, need)

    return needed


def thread_decider(service: ThreadService) -> Callable[[DecisionNeeded], None]:
    """``on_decision_needed`` for the threading HTTP service (called under its lock)."""
    http = service.http

    def run(need: DecisionNeeded) -> None:
        answer = answer_blocking(need.question, http.decision_timeout)
        with service.lock:
            if service._closed:
                return
            _decide(service, need, answer, time.monotonic())
            service._safe_pump()

    def needed(need: DecisionNeeded) -> None:
        threading.Thread(target=run, args=(need,), name="mcp-sansio-http-decision",
                         daemon=True).start()

    return needed
