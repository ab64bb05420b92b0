"""The ``mcp-sansio`` command line (also ``python -m mcp_sansio``).

* ``demo`` spawns the example server as a real subprocess over stdio (asyncio) and runs a
  client against it: the handshake, a list, a call with progress, a cancelled call and a
  stateless-era call. ``demo --in-process`` instead drives a client and a server connection
  by hand in this process and prints the wire transcript -- the shortest complete example of
  the core without any I/O.
* ``serve-example`` serves the example server (every conformance fixture, plus ``echo``,
  ``add`` and ``sleep``) on stdio, on the runtime of your choice.
* ``probe -- COMMAND ...`` connects to any stdio server and prints what it offers;
  ``probe --url URL`` does the same for an HTTP server (Streamable HTTP or legacy HTTP+SSE).
* ``check -- COMMAND ...`` / ``check --url URL`` / ``check --client -- COMMAND ...`` /
  ``check --client-url -- COMMAND ...`` judges a peer with the testing kit
  (``mcp_sansio.adapters.tools._check_cli``).
* ``conformance-client URL`` is the client the official conformance harness drives in its
  client mode.

The commands that do I/O live in ``mcp_sansio.adapters.tools._cli``: this module only parses --
numbers are checked by argparse's ``type=`` (a usage error, exit 2, before anything starts) --
and turns Ctrl-C into one line and exit 130 (the statuses: docs/cli.rst).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from . import (
    HANDSHAKE_REVISIONS,
    NEED_DATA,
    ClientConnection,
    Connection,
    Event,
    Request,
    ServerConnection,
    __version__,
    _json,
)


def _drain(conn: Connection) -> list[Event]:
    events: list[Event] = []
    while (event := conn.next_event()) is not NEED_DATA:
        events.append(event)
    return events


def run_demo(revision: str, out: TextIO) -> int:
    """Drive a client and a server by hand; print what crosses the wire and what each sees."""
    client = ClientConnection(
        info={"name": "demo-client", "version": __version__}, versions=[revision]
    )
    server = ServerConnection(
        info={"name": "demo-server", "version": __version__},
        capabilities={"tools": {}},
        instructions="Call the echo tool.",
    )
    now = 0.0

    def shuttle(src: Connection, dst: Connection, arrow: str) -> None:
        data = src.data_to_send()
        for line in data.splitlines():
            out.write(f"{arrow} {line.decode()}\n")
        if data:
            dst.receive_data(data, now=now)

    def show(who: str, events: list[Event]) -> None:
        for event in events:
            out.write(f"   [{who} event] {event!r}\n")

    def serve() -> None:
        # The server application: answer tools/call with an echo of its text argument.
        for event in _drain(server):
            show("server", [event])
            if isinstance(event, Request) and event.method == "tools/call":
                text = ((event.params or {}).get("arguments") or {}).get("text", "")
                server.send_response(
                    event.request_id, {"content": [{"type": "text", "text": text}]}
                )
        shuttle(server, client, "S->C")

    out.write(f"# mcp-sansio {__version__} demo, revision {revision}, JSON: {_json.backend}\n")
    out.write("# 1. handshake\n")
    client.initialize(now=now)
    shuttle(client, server, "C->S")
    serve()
    show("client", _drain(client))
    shuttle(client, server, "C->S")  # notifications/initialized
    serve()

    out.write("# 2. ping (answered by the server's core on its own)\n")
    client.send_request("ping", now=now)
    shuttle(client, server, "C->S")
    serve()
    show("client", _drain(client))

    out.write("# 3. one request: tools/call\n")
    client.send_request(
        "tools/call", {"name": "echo", "arguments": {"text": "hello, MCP"}}, now=now
    )
    shuttle(client, server, "C->S")
    serve()
    show("client", _drain(client))
    out.write(f"# client state: {client.state.value}, server state: {server.state.value}\n")
    return 0


#: Exit statuses (documented in docs/cli.rst): 0 done; 1 the command failed (could not
#: connect, could not listen); 2 a usage error (argparse's own status for bad arguments);
#: 130 interrupted by Ctrl-C (128 + SIGINT, the shells' convention).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _seconds(text: str) -> float:
    """``--timeout``: a positive, finite number of seconds (refused when parsing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def _port(text: str) -> int:
    """``--port``: 0 (any free port) to 65535, the range of a TCP port (RFC 793)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0 (any free port) to 65535: {text!r}")
    return value


def _adapters_cli() -> Any:
    """The commands that do I/O (imported only when one runs: the core stays I/O-free)."""
    return importlib.import_module("mcp_sansio.adapters.tools._cli")


#: Sub-commands whose module parses their own arguments (``main(argv) -> status``).
_OWN_PARSERS = {
    "call": "mcp_sansio.adapters.tools._call_cli",
    "dev-auth-server": "mcp_sansio.adapters.tools._dev_auth_server",
}


def _interruptible(command: str, run: Callable[[], int]) -> int:
    try:
        return run()
    except KeyboardInterrupt:
        sys.stderr.write(f"mcp-sansio {command}: interrupted\n")
        return EXIT_INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    own = _OWN_PARSERS.get(args_list[0]) if args_list else None
    if own is not None:  # these sub-commands parse their own arguments
        return _interruptible(args_list[0], lambda: int(
            importlib.import_module(own).main(args_list[1:])))
    if args_list[:1] == ["check"]:  # the check sub-command parses its own arguments
        return int(importlib.import_module("mcp_sansio.adapters.tools._check_cli").main(
            args_list[1:]))
    # (its help formatter is told the terminal's width: tools/_help.py)
    parser_class = importlib.import_module("mcp_sansio.adapters.tools._help").Parser
    parser = parser_class(
        prog="mcp-sansio",
        description="mcp-sansio: the Model Context Protocol, sans I/O.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-sansio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    demo = sub.add_parser(
        "demo",
        help="run the example server as a subprocess and a client against it",
        description="Spawn the example server as a subprocess over stdio (asyncio) and run a "
        "client against it: the handshake, tools/list, a call with progress, a cancelled "
        "call and a stateless-era call, told as a short account. With --in-process: drive a "
        "client and a server connection by hand in this process and print the wire "
        "transcript of the handshake, a ping and one tools/call.",
    )
    demo.add_argument(
        "--revision",
        choices=HANDSHAKE_REVISIONS,
        default=HANDSHAKE_REVISIONS[-1],
        help="the handshake-era revision the client offers (default: %(default)s)",
    )
    demo.add_argument(
        "--json",
        choices=_json.available_backends(),
        default=_json.backend,
        help="the JSON backend to use (default: %(default)s)",
    )
    demo.add_argument("--in-process", action="store_true",
                      help="no subprocess: print the wire transcript of two connections "
                      "driven by hand")
    runtimes = ("asyncio", "trio", "threading")
    serve = sub.add_parser(
        "serve-example",
        help="serve the example server (the conformance fixtures, echo, add, sleep)",
        description="Serve the example server on stdio until stdin closes: every fixture of "
        "the official conformance harness, plus echo(text), add(a, b) and sleep(seconds). "
        "It speaks both eras. Logs go to stderr; stdout carries protocol messages only.",
    )
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                       help="the transport (default: %(default)s); http serves Streamable "
                       "HTTP (both eras) at http://HOST:PORT/mcp and prints that URL")
    serve.add_argument("--host", default="127.0.0.1",
                       help="http: the address to bind (default: %(default)s)")
    serve.add_argument("--port", type=_port, default=0,
                       help="http: the port (default: %(default)s, any free port)")
    serve.add_argument("--runtime", choices=runtimes, default="asyncio",
                       help="the runtime to serve with (default: %(default)s; trio needs "
                       "the trio extra)")
    serve.add_argument("--store", metavar="URL", default=None,
                       help="http: share sessions, SSE events, the event bus and the "
                       "requestState keys with every server given the same Redis "
                       "(redis://HOST:PORT/DB or unix:///PATH; asyncio; the redis extra; "
                       "with --engine, every worker connects to it)")
    serve.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                       dest="allow_hosts",
                       help="http: a Host value clients use (a name, any port, or "
                       "NAME:PORT); repeatable. Required with a --host other clients can "
                       "reach: requests naming any other host are refused (403) against DNS "
                       "rebinding")
    serve.add_argument("--sessionless", action="store_true",
                       help="http: serve handshake-era clients with no session kept, so "
                       "that any process can serve any request (no GET stream, no requests "
                       "to the client; see docs/http.rst, Sessionless mode)")
    serve.add_argument("--engine", choices=["uvicorn", "hypercorn", "granian"], default=None,
                       help="http: serve the ASGI application on this engine (each needs "
                       "its extra, e.g. mcp-sansio[uvicorn]); --runtime trio selects "
                       "hypercorn's trio worker")
    serve.add_argument("--uds", metavar="PATH", default=None,
                       help="listen on this Unix domain socket instead of "
                       "a TCP port (mode 0600; a stale socket file is replaced; clients "
                       "connect with the URL http://localhost/mcp)")
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="with --engine: worker processes (default: %(default)s); they "
                       "share one requestState key ring, from $MCP_SANSIO_STATE_KEYS or "
                       "drawn at start (docs/keys.rst), or the store's with --store; "
                       "without --store, handshake-era clients are served sessionless")
    serve.add_argument("--wire", choices=["h11", "httptools"], default="h11",
                       help="http: the HTTP/1.1 parser of our own server (default: "
                       "%(default)s, the reference; httptools is faster and needs the fast "
                       "extra). See docs/wires.rst")
    probe = sub.add_parser(
        "probe",
        help="connect to a stdio or HTTP server and print what it offers",
        description="Spawn COMMAND as an MCP server over stdio (or connect to the HTTP "
        "server at --url), negotiate the era and version, and print its info, capabilities, "
        "tools, resources and prompts as tables (over HTTP, also the transport found: "
        "Streamable HTTP or legacy HTTP+SSE). Exits 1 with a message when it cannot.",
        usage="mcp-sansio probe [-h] [--runtime RUNTIME] [--era ERA] [--timeout SECONDS] "
        "[--verbose] [--no-login] [--no-store] [--token-file PATH] "
        "[--client-credentials CLIENT_ID [--client-secret-file PATH | --client-key-file PATH]]"
        " (--url URL | -- COMMAND [ARGS ...])",
    )
    probe.add_argument("--url", default=None,
                       help="the MCP endpoint of an HTTP server (http://HOST:PORT/mcp)")
    probe.add_argument("--runtime", choices=runtimes, default="asyncio",
                       help="the runtime to use (default: %(default)s)")
    probe.add_argument("--era", choices=["handshake", "stateless"], default=None,
                       help="skip the era probe and use this era")
    probe.add_argument("--timeout", type=_seconds, default=10.0, metavar="SECONDS",
                       help="bound on the whole connect, then on each listing request "
                       "(default: %(default)s)")
    probe.add_argument("--verbose", action="store_true",
                       help="tell each step of the connect (as on a terminal) and show the "
                       "client's log")
    probe.add_argument("--no-login", action="store_true",
                       help="--url: report a server that asks for authorization (401) "
                       "instead of logging in through the browser")
    probe.add_argument("--no-store", action="store_true",
                       help="--url: keep the login's tokens in memory only (neither read "
                       "nor written)")
    probe.add_argument("--token-file", default=None, metavar="PATH",
                       help="--url: where tokens are kept (default: tokens.json in the "
                       "mcp-sansio folder of the user's cache directory)")
    probe.add_argument("--client-credentials", default=None, metavar="CLIENT_ID",
                       help="--url: authorize as this machine client with the client "
                       "credentials grant instead of a browser login; the secret comes from "
                       "--client-secret-file or the MCP_SANSIO_CLIENT_SECRET environment "
                       "variable, never the command line")
    probe.add_argument("--client-secret-file", default=None, metavar="PATH",
                       help="--client-credentials: a file holding the client secret")
    probe.add_argument("--client-key-file", default=None, metavar="PATH",
                       help="--client-credentials: a private key (PEM, or a JWK as JSON) "
                       "to sign private_key_jwt assertions with, instead of a secret")
    probe.add_argument("server", nargs=argparse.REMAINDER, metavar="COMMAND [ARGS ...]",
                       help="the server command, after --")
    sub.add_parser("check", help="check an MCP server or client against the specification "
                   "(mcp-sansio check --help)", add_help=False)
    sub.add_parser("call", help="call a tool, read a resource, get a prompt or list them "
                   "(mcp-sansio call --help)", add_help=False)
    sub.add_parser("dev-auth-server", help="a development OAuth authorization server on "
                   "loopback (mcp-sansio dev-auth-server --help)", add_help=False)
    conformance = sub.add_parser(
        "conformance-client",
        help="the client the official conformance harness runs in its client mode",
        description="Connect to the harness's server at URL and act out the scenario named "
        "by MCP_CONFORMANCE_SCENARIO (MCP_CONFORMANCE_PROTOCOL_VERSION picks the revision).",
    )
    conformance.add_argument("url", metavar="URL", help="the server's MCP endpoint")
    args = parser.parse_args(argv)
    try:
        return _run(parser, args)
    except KeyboardInterrupt:
        # Ctrl-C is how a person stops a command: one line, not a traceback.
        sys.stderr.write(f"mcp-sansio {args.command}: interrupted\n")
        return EXIT_INTERRUPTED


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "demo":
        _json.use_backend(args.json)
        try:
            if args.in_process:
                return run_demo(args.revision, sys.stdout)
            return int(_adapters_cli().demo(sys.stdout, args.revision))
        except BrokenPipeError:  # e.g. piped into `head`
            return 0
    if args.command == "serve-example":
        return int(_adapters_cli().serve_example(args.runtime, transport=args.transport,
                                                 host=args.host, port=args.port,
                                                 allow_hosts=args.allow_hosts,
                                                 sessionless=args.sessionless,
                                                 store=args.store,
                                                 engine=args.engine, workers=args.workers,
                                                 wire=args.wire, uds=args.uds))
    if args.command == "probe":
        command = args.server[1:] if args.server[:1] == ["--"] else args.server
        try:
            return int(_adapters_cli().probe(sys.stdout, command, runtime=args.runtime,
                                             era=args.era, timeout=args.timeout,
                                             verbose=args.verbose, url=args.url,
                                             login=not args.no_login,
                                             store=not args.no_store,
                                             token_file=args.token_file,
                                             client_credentials=args.client_credentials,
                                             client_secret_file=args.client_secret_file,
                                             client_key_file=args.client_key_file))
        except BrokenPipeError:  # e.g. piped into `head`
            return 0
    if args.command == "conformance-client":
        return int(_adapters_cli().conformance_client(args.url))
    parser.print_help()
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
