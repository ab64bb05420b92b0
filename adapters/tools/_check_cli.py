"""``mcp-sansio check``: judge an MCP peer with the testing kit, from the command line.

Theory of operation
-------------------
Four forms, one parser: ``check -- COMMAND ...`` (a stdio server), ``check --url URL`` (an
HTTP server), ``check --client -- COMMAND ...`` (a stdio client; ``{server}`` in its
arguments becomes the kit's server command) and ``check --client-url -- COMMAND ...`` (the
kit serves Streamable HTTP and runs the command with the URL appended). Servers are checked
by :func:`mcp_sansio.adapters.testing_server.check_server`; clients by
``mcp_sansio.adapters.testing_client.check_client``, imported only when asked for.

The readable report goes to stdout (findings grouped by rule, each with its reproducing
exchange); ``--json FILE`` and ``--junit FILE`` write the machine-readable ones ("-" is
stdout). Exit status: 0 when no MUST is violated, 1 when one is, 2 on bad usage (including
a peer that cannot be reached at all: nothing was checked). Whatever the peer does, the
run ends with one of these and a report, never a traceback.

Every run has a seed, printed in each report: ``--seed N`` replays a run (the same seed on a
deterministic peer gives the same findings); without it one is drawn; ``--derandomize`` is
``--seed 0`` (for CI). ``--wild`` draws extreme numbers for tool arguments.

``mcp_sansio/__main__.py`` hands ``check`` and its arguments to :func:`main` before its own
parser runs, so this module owns the whole sub-command.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from mcp_sansio import KNOWN_REVISIONS

__all__ = ["build_parser", "main"]

logger = logging.getLogger(__name__)

USAGE = ("mcp-sansio check [options] (-- COMMAND [ARGS ...] | --url URL | "
         "--client -- COMMAND [ARGS ...] | --client-url -- COMMAND [ARGS ...])")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-sansio check", usage=USAGE,
        description="Check an MCP peer against the specification with property-based "
        "tests: a stdio server (-- COMMAND), an HTTP server (--url), a stdio client "
        "(--client -- COMMAND, with {server} in its arguments replaced by the kit's server "
        "command) or an HTTP client (--client-url -- COMMAND, run with the kit's URL "
        "appended). Prints the findings grouped by rule with the exchange that reproduces "
        "each; exits 0 when no MUST is violated, 1 otherwise, 2 on bad usage.")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--url", help="the MCP endpoint of an HTTP server")
    target.add_argument("--client", action="store_true",
                        help="the command after -- is a stdio client")
    target.add_argument("--client-url", action="store_true",
                        help="the command after -- is an HTTP client (the URL is appended)")
    parser.add_argument("--transport", choices=["auto", "streamable", "sse"], default="auto",
                        help="--url: Streamable HTTP, legacy HTTP+SSE, or find out "
                        "(default: %(default)s)")
    parser.add_argument("--legacy-sse", action="store_true",
                        help="--client-url: serve the client the legacy HTTP+SSE transport "
                        "(2024-11-05) instead of Streamable HTTP")
    parser.add_argument("--revision", choices=KNOWN_REVISIONS, default=None,
                        help="check this revision only")
    parser.add_argument("--era", choices=["handshake", "stateless"], default=None,
                        help="check this era's revisions only")
    parser.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                        help="wall time for the whole run (default: %(default)s)")
    parser.add_argument("--call-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="how long one call may take (default: %(default)s)")
    parser.add_argument("--examples", type=int, default=50, metavar="N",
                        help="random sessions after the sweep (default: %(default)s)")
    parser.add_argument("--tools", default=None, metavar="PATTERNS",
                        help="comma-separated shell patterns: call only these tools")
    parser.add_argument("--exclude-tools", default=None, metavar="PATTERNS",
                        help="comma-separated shell patterns: never call these tools")
    parser.add_argument("--allow-destructive", action="store_true",
                        help="also call tools annotated destructiveHint: true")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="draw the random sessions from seed N (printed in every "
                        "report; default: a new one each run)")
    parser.add_argument("--derandomize", action="store_true",
                        help="the same draws every run (--seed 0), for CI")
    parser.add_argument("--wild", action="store_true",
                        help="extreme numbers in tool arguments (default: the schema's "
                        "minimum/maximum, else small magnitudes)")
    parser.add_argument("--shrink", action="store_true",
                        help="let hypothesis shrink the sessions of what only random "
                        "sessions found (slow: a new process or session per try)")
    parser.add_argument("--json", dest="json_file", default=None, metavar="FILE",
                        help="write the report as JSON ('-': stdout)")
    parser.add_argument("--junit", dest="junit_file", default=None, metavar="FILE",
                        help="write the report as JUnit XML ('-': stdout)")
    parser.add_argument("--verbose", action="store_true",
                        help="show the peer's stderr")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND [ARGS ...]",
                        help="the peer's command, after --")
    return parser


def _patterns(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [p.strip() for p in text.split(",") if p.strip()]


def _write(target: str, text: str, out: TextIO) -> None:
    if target == "-":
        out.write(text + "\n")
    else:
        Path(target).write_text(text + "\n", encoding="utf-8")


def main(argv: Sequence[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``mcp-sansio check`` with ``argv`` (the arguments after ``check``)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse: 2 on bad usage, 0 for --help
        return int(exc.code or 0)
    command = args.command[1:] if args.command[:1] == ["--"] else list(args.command)

    def usage(message: str) -> int:
        parser.print_usage(err)
        err.write(f"mcp-sansio check: {message}\n")
        return 2

    if args.url is not None and command:
        return usage("give either --url or a command after --, not both")
    if args.url is None and not command:
        return usage("nothing to check: give -- COMMAND ... or --url URL")
    if args.examples < 0 or args.budget <= 0 or args.call_timeout <= 0:
        return usage("--examples must be >= 0, --budget and --call-timeout > 0")
    if args.seed is not None and args.derandomize:
        return usage("give either --seed or --derandomize, not both")
    if args.seed is None:
        args.seed = 0 if args.derandomize else random.SystemRandom().randrange(2**32)
    if args.client and not any("{server}" in part for part in command):
        return usage("--client: put {server} in the client's arguments where the server "
                     "command goes")
    if args.revision is not None and args.era is not None:
        from mcp_sansio import FEATURES

        stateless = not FEATURES[args.revision].handshake
        if stateless != (args.era == "stateless"):
            return usage(f"revision {args.revision} is not of the {args.era} era")
    try:
        report = _run(args, command, err)
    except (ValueError, OSError) as exc:
        err.write(f"mcp-sansio check: {exc}\n")
        return 2
    except Exception as exc:  # never a traceback: what went wrong, and the seed to replay it
        logger.debug("check failed", exc_info=True)
        err.write(f"mcp-sansio check: the check stopped on an error of its own "
                  f"({type(exc).__name__}: {exc}); seed {args.seed}\n")
        return 2
    if report is None:
        return 2
    if not report.sessions and not report.findings:
        err.write("mcp-sansio check: no session could be opened with the peer; "
                  + ("; ".join(report.notes) or "it did not answer") + "\n")
        _outputs(args, report, out)
        return 2
    _outputs(args, report, out)
    return 0 if report.ok else 1


def _outputs(args: argparse.Namespace, report: Any, out: TextIO) -> None:
    if args.json_file != "-" and args.junit_file != "-":
        out.write(report.summary() + "\n")
    if args.json_file is not None:
        _write(args.json_file, json.dumps(report.to_json(), indent=2, ensure_ascii=False,
                                          default=repr), out)
    if args.junit_file is not None:
        _write(args.junit_file, report.to_junit(), out)


def _run(args: argparse.Namespace, command: list[str], err: TextIO) -> Any:
    stderr: Any = None if args.verbose else subprocess.DEVNULL
    if args.legacy_sse and not args.client_url:
        err.write("mcp-sansio check: --legacy-sse goes with --client-url\n")
        return None
    if args.client or args.client_url:
        try:
            module = importlib.import_module("mcp_sansio.adapters.testing_client")
        except ImportError:
            err.write("mcp-sansio check: checking clients is not available in this "
                      "version\n")
            return None
        return module.check_client(command, http=bool(args.client_url),
                                   revision=args.revision, era=args.era, budget=args.budget,
                                   call_timeout=args.call_timeout, examples=args.examples,
                                   seed=args.seed, legacy_sse=args.legacy_sse)
    from .testing_server import check_server

    return check_server(
        command or None, url=args.url, transport=args.transport, revision=args.revision,
        era=args.era, budget=args.budget, call_timeout=args.call_timeout,
        examples=args.examples, tools=_patterns(args.tools),
        exclude_tools=_patterns(args.exclude_tools),
        allow_destructive=args.allow_destructive, shrink_findings=args.shrink,
        stderr=stderr, seed=args.seed, wild=args.wild)
