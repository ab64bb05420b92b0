"""``mcp-sansio dev-auth-server``: the development authorization server, served on loopback.

The logic is :class:`mcp_sansio.testing.auth_server.AuthorizationServer` (sans I/O); this
module gives it a socket -- the standard library's threading HTTP server on 127.0.0.1 only
(a development server that approves anyone must not be reachable from elsewhere) -- a fresh
ES256 key and the system's randomness. :class:`DevAuthServer` runs it in a thread for tests
and examples (a context manager); :func:`main` is the command: it prints the issuer URL on
stdout, then pre-registered clients and tokens asked for on the command line, and serves
until Ctrl-C or SIGTERM (exit 0). It needs the ``testing`` and ``auth`` extras.
"""

from __future__ import annotations

import argparse
import http.server
import secrets
import signal
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any

PROG = "mcp-sansio dev-auth-server"


class DevAuthServer:
    """The development authorization server on ``127.0.0.1:port`` in a thread.

    ``with DevAuthServer() as auth_server:`` -- then :attr:`issuer` is its URL and
    :attr:`logic` the :class:`~mcp_sansio.testing.auth_server.AuthorizationServer` (to
    :meth:`~mcp_sansio.testing.auth_server.AuthorizationServer.register` clients, ``issue``
    tokens, get a ``verifier``). Options are the logic's (``user``, ``scopes``,
    ``token_lifetime``)."""

    def __init__(self, port: int = 0, **options: Any) -> None:
        from joserfc.jwk import ECKey  # lazy: the auth extra

        # Lazy: OAuth only: a stdio start does without it.
        from mcp_sansio.auth import HTTPRequest, HTTPResponse
        from mcp_sansio.testing.auth_server import AuthorizationServer  # lazy: the testing extra

        key = ECKey.generate_key("P-256", parameters={"kid": secrets.token_hex(4),
                                                      "alg": "ES256"})
        lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: the command says what matters

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, 1 << 20)) if length else b""
                request = HTTPRequest(self.command, owner.issuer + self.path,
                                      tuple(self.headers.items()), body)
                with lock:
                    answer: HTTPResponse = owner.logic.handle(request, time.time())
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_GET = do_POST = _serve

        self._http = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._http.daemon_threads = True
        #: The issuer: ``http://127.0.0.1:PORT``.
        self.issuer = f"http://127.0.0.1:{self._http.server_address[1]}"
        self.logic = AuthorizationServer(self.issuer, key.as_dict(private=True),
                                         secrets.token_bytes, **options)
        self._thread: threading.Thread | None = None

    def start(self) -> DevAuthServer:
        self._thread = threading.Thread(target=self._http.serve_forever,
                                        name="dev-auth-server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._http.shutdown()
            self._thread.join(10)
            self._thread = None
        self._http.server_close()

    def serve_forever(self) -> None:
        self._http.serve_forever()

    def __enter__(self) -> DevAuthServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Serve a development OAuth 2.1 authorization server on 127.0.0.1: "
        "metadata, dynamic registration, authorization code with PKCE (approved at once as "
        "--user, or asking in the browser with --ask), refresh, client credentials, JWKS, "
        "ES256 JWT access tokens for the resource asked for. For trying the OAuth client "
        "and testing protected servers; never for production.")
    parser.add_argument("--port", type=int, default=0, help="the port (default: any free)")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--user", default="dev-user",
                     help="the user every authorization is approved for (default: "
                     "%(default)s)")
    who.add_argument("--ask", action="store_true",
                     help="ask in the browser which user approves (or deny)")
    parser.add_argument("--scope", action="append", default=None, metavar="SCOPE",
                        dest="scopes", help="a scope it grants (repeatable; default: "
                        "mcp:read and mcp:write); others are refused")
    parser.add_argument("--token-lifetime", type=int, default=3600, metavar="SECONDS",
                        help="seconds an access token lives (default: %(default)s)")
    parser.add_argument("--client", action="append", default=[], metavar="ID",
                        help="pre-register a confidential client with this id and print "
                        "its secret (for client credentials); repeatable")
    parser.add_argument("--token", action="append", default=[], metavar="RESOURCE",
                        help="print an access token for RESOURCE (the MCP server's URL) "
                        "with the granted scopes, as --user; repeatable")
    return parser


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    try:
        server = DevAuthServer(args.port, user=None if args.ask else args.user,
                               scopes=args.scopes or ("mcp:read", "mcp:write"),
                               token_lifetime=args.token_lifetime)
    except ImportError as exc:
        sys.stderr.write(f"{PROG}: needs the testing and auth extras "
                         f"(pip install 'mcp-sansio[testing,auth]'): {exc}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"{PROG}: cannot listen on 127.0.0.1:{args.port}: "
                         f"{exc.strerror or exc}\n")
        return 1
    out = sys.stdout
    out.write(server.issuer + "\n")
    logic = server.logic
    for client_id in args.client:
        client = logic.register(confidential=True, client_id=client_id)
        out.write(f"client {client.client_id} secret {client.secret}\n")
    for resource in args.token:
        scopes = logic.scopes or ()
        out.write(f"token {resource} {logic.issue(args.user, resource, scopes, time.time())}\n")
    out.flush()

    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except _Terminated:
        return 0  # SIGTERM: a clean stop (Ctrl-C is the command line's 130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
    return 0


class _Terminated(Exception):
    """SIGTERM arrived."""
