"""The ``mcp-sansio`` command line (also ``python -m mcp_sansio``).

``demo`` runs a client and a server connection against each other in this process and prints
the wire transcript: the handshake, a ping and one ``tools/call``. It is also the shortest
complete example of driving both sides of the core by hand.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mcp-sansio",
        description="mcp-sansio: the Model Context Protocol, sans I/O.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-sansio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="run a client and a server in process and print the wire transcript",
        description="Run a client and a server connection against each other in this process "
        "and print the wire transcript of the handshake, a ping and one tools/call.",
    )
    demo.add_argument(
        "--revision",
        choices=HANDSHAKE_REVISIONS,
        default=HANDSHAKE_REVISIONS[-1],
        help="the protocol revision the client offers (default: %(default)s)",
    )
    demo.add_argument(
        "--json",
        choices=_json.available_backends(),
        default=_json.backend,
        help="the JSON backend to use (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if args.command == "demo":
        _json.use_backend(args.json)
        try:
            return run_demo(args.revision, sys.stdout)
        except BrokenPipeError:  # e.g. piped into `head`
            return 0
    parser.print_help()
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
