"""Check a server -- a command over stdio or a URL over HTTP -- with the testing kit, in one
call: what ``mcp-sansio check`` runs, and what a project's own test suite calls.

Theory of operation
-------------------
:func:`check_server` makes a transport factory for the peer (a fresh
:class:`~mcp_sansio.adapters.testing_stdio.StdioTransport` per session for a command; a
:class:`~mcp_sansio.adapters.testing_http.StreamableHTTPTransport` or
:class:`~mcp_sansio.adapters.testing_http.LegacySSETransport` per session for a URL, the
kind found the way clients find it unless given), then runs the kit twice into one
:class:`~mcp_sansio.testing.Report`: first :func:`~mcp_sansio.testing.sweep` (every rule
once per revision, hypothesis's minimal example of each: the reproducing exchange of a
finding is as small as the kit can make it), then :func:`~mcp_sansio.testing.check_peer`
(``examples`` random sessions) with whatever budget is left. The clock is
:func:`time.monotonic`; the budget bounds the whole run and ``call_timeout`` each tool call.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

from mcp_sansio import HANDSHAKE_REVISIONS, KNOWN_REVISIONS, STATELESS_REVISIONS
from mcp_sansio.testing import Report, Transport, check_peer, shrink, sweep

from .testing_http import LegacySSETransport, StreamableHTTPTransport, detect_transport
from .testing_stdio import StdioTransport

__all__ = ["assert_server_conforms", "check_server", "revisions_for"]


def revisions_for(revision: str | None = None, era: str | None = None,
                  *, legacy_sse: bool = False) -> tuple[str, ...]:
    """The revisions a run tries: ``revision`` alone, or the era's, or all (HTTP+SSE
    servers: the handshake era only -- the stateless era has no such transport).

    :raises ValueError: an unknown revision or era, or a revision outside the era."""
    if era not in (None, "handshake", "stateless"):
        raise ValueError(f"unknown era {era!r} (handshake or stateless)")
    pool: tuple[str, ...] = {None: KNOWN_REVISIONS, "handshake": HANDSHAKE_REVISIONS,
                             "stateless": STATELESS_REVISIONS}[era]
    if legacy_sse:
        pool = tuple(r for r in pool if r in HANDSHAKE_REVISIONS)
    if revision is not None:
        if revision not in pool:
            raise ValueError(f"revision {revision!r} is not one of {', '.join(pool)}")
        return (revision,)
    if not pool:
        raise ValueError("no revision fits (the stateless era has no HTTP+SSE transport)")
    return pool


def check_server(
    command: Sequence[str] | None = None,
    *,
    url: str | None = None,
    transport: str = "auto",
    revision: str | None = None,
    era: str | None = None,
    budget: float = 60.0,
    call_timeout: float = 10.0,
    examples: int = 50,
    steps: int = 30,
    tools: Iterable[str] | None = None,
    exclude_tools: Iterable[str] | None = None,
    allow_destructive: bool = False,
    max_argument_size: int = 4096,
    reply_timeout: float = 5.0,
    settle_time: float = 0.3,
    sweep_first: bool = True,
    shrink_findings: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stderr: IO[Any] | int | None = subprocess.DEVNULL,
    headers: Mapping[str, str] | None = None,
    seed: int | None = None,
    wild: bool = False,
) -> Report:
    """Check one server and return the :class:`~mcp_sansio.testing.Report`.

    :param command: the server command (stdio), or
    :param url: its MCP endpoint (HTTP).
    :param transport: for a URL: ``"streamable"``, ``"sse"`` (HTTP+SSE, 2024-11-05) or
        ``"auto"`` (find out, as the transports page tells clients to).
    :param revision: try only this revision; :param era: only this era's.
    :param budget: seconds for the whole run (default 60: a minute is what a CI step can
        spare per peer; what is not reached is marked cut short).
    :param call_timeout: seconds one tool call may take (default 10: an example tool
        answers in milliseconds; a slow one that keeps reporting progress is noted, not
        reported).
    :param examples: random sessions after the sweep (0: the sweep only).
    :param steps: the most rules per random session.
    :param tools: shell-style patterns of the tools to call; :param exclude_tools: not to.
    :param allow_destructive: also call tools annotated ``destructiveHint: true``.
    :param max_argument_size: largest generated ``arguments``, in bytes of JSON.
    :param sweep_first: run the deterministic sweep before the random sessions.
    :param shrink_findings: for each check that only random sessions tripped, let
        hypothesis shrink a session that shows it, in the budget left, and add that
        finding (marked ``shrunk``): its exchange is the smallest the kit found. Off by
        default: every try is a new process (or HTTP session), and a peer whose timing
        varies cannot be shrunk at all.
    :param cwd: :param env: :param stderr: for the command's process.
    :param headers: extra HTTP headers (``Authorization``...).
    :param seed: the random sessions' seed (in the report; None: hypothesis's fixed one).
    :param wild: numbers in tool arguments anywhere in range, extremes included (default:
        realistic ones).
    """
    if (command is None) == (url is None):
        raise ValueError("give either a command or a url")
    legacy = False
    factory: Callable[[], Transport]
    if url is not None:
        if transport not in ("auto", "streamable", "sse"):
            raise ValueError(f"unknown transport {transport!r}")
        kind = detect_transport(url) if transport == "auto" else transport
        legacy = kind == "sse"
        if legacy:
            def factory() -> Transport:
                return LegacySSETransport(url, headers=headers,
                                          timeout=max(60.0, 2 * call_timeout))
        else:
            def factory() -> Transport:
                return StreamableHTTPTransport(url, headers=headers,
                                               timeout=max(60.0, 2 * call_timeout))
    else:
        argv = list(command or [])
        if not argv:
            raise ValueError("the command is empty")

        def factory() -> Transport:
            return StdioTransport(argv, cwd=cwd, env=env, stderr=stderr)

    revisions = revisions_for(revision, era, legacy_sse=legacy)
    report = Report(seed=seed)
    start = time.monotonic()
    scope: dict[str, Any] = {
        "clock": time.monotonic, "call_timeout": call_timeout, "tools": tools,
        "exclude_tools": exclude_tools, "allow_destructive": allow_destructive,
        "max_argument_size": max_argument_size, "wild": wild,
    }
    if sweep_first:
        sweep(factory, revisions=revisions, reply_timeout=reply_timeout,
              settle_time=settle_time, report=report, budget=budget, **scope)
    swept = report.rules()
    left = budget - (time.monotonic() - start)
    if examples > 0 and left > 0 and not report.cut_short:
        check_peer(factory, revisions=revisions, sessions=examples, steps=steps,
                   reply_timeout=reply_timeout, settle_time=settle_time, report=report,
                   budget=left, seed=seed, **scope)
    elif examples > 0 and left <= 0:
        report.cut_short = True
    # The sweep's exchanges are minimal already (hypothesis's simplest example of each
    # rule); what only random sessions found is shrunk, while the budget lasts.
    for rule in sorted(report.rules() - swept) if shrink_findings else ():
        left = budget - (time.monotonic() - start)
        if left <= 0 or report.cut_short:
            break
        found = shrink(factory, rule, revisions=revisions, sessions=max(examples, 1),
                       steps=steps, reply_timeout=reply_timeout, settle_time=settle_time,
                       budget=left, **scope)
        if found is not None:
            report.add(found)
    return report


def assert_server_conforms(command: Sequence[str] | None = None, **options: Any) -> Report:
    """:func:`check_server`, then :meth:`~mcp_sansio.testing.Report.raise_for_must`: raises
    :class:`~mcp_sansio.testing.CheckFailed` with the readable report when a MUST was
    violated; returns the report (SHOULD findings and notes included) otherwise."""
    report = check_server(command, **options)
    report.raise_for_must()
    return report
