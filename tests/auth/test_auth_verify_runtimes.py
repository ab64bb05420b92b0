"""Verifiers that must ask the authorization server, on every runtime's HTTP server, over
loopback: RFC 7662 introspection (active, inactive, wrong audience, an endpoint that is
down, answers 500 or is too slow -> the documented answer, never a hang), the JWKS keeper
with a key rotation, and a client that leaves while its request is parked."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest
import trio
from joserfc import jwt
from joserfc.jwk import ECKey
from mcp_sansio.adapters.auth.verify import JWKSKeeper

from mcp_sansio.auth import IntrospectionVerifier, ProtectedResource
from tests.auth.test_auth_server import RUNTIMES, serving, whoami_server
from tests.http_stories import GUARD, SyncConn
from tests.http_util import init_body

RESOURCE = "http://127.0.0.1/mcp"
#: The decision timeout the servers here get: short, so the slow endpoint's case is quick;
#: the endpoint sleeps well past it.
TIMEOUT = 1.0


class AuthorizationServer:
    """A loopback authorization server: an introspection endpoint whose answer depends on
    the token, and a JWKS whose keys the test rotates."""

    def __init__(self) -> None:
        self.keys: list[ECKey] = []
        self.introspections = 0
        self.jwks_fetches = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, doc: Any) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                outer.jwks_fetches += 1
                self._send(200, {"keys": [k.as_dict(private=False) for k in outer.keys]})

            def do_POST(self) -> None:
                outer.introspections += 1
                length = int(self.headers.get("content-length", "0"))
                form = parse_qs(self.rfile.read(length).decode())
                assert self.headers["authorization"].startswith("Basic ")
                token = form["token"][0]
                if token == "slow":
                    time.sleep(TIMEOUT * 4)
                if token == "broken":
                    self._send(500, {"error": "server_error"})
                    return
                doc = {"active": token in ("good", "slow", "foreign"), "sub": "ada",
                       "scope": "mcp:read", "client_id": "c1", "exp": time.time() + 3600,
                       "aud": RESOURCE if token != "foreign" else "http://elsewhere/mcp"}
                self._send(200, doc)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> AuthorizationServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def authorization_server() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        yield server


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def initialize(port: int, token: str) -> tuple[int, dict[str, str]]:
    conn = SyncConn(port)
    try:
        status, headers, _ = conn.request("POST", init_body(), {
            "authorization": f"Bearer {token}"})
        return status, headers
    finally:
        conn.sock.close()


def protected_by(verifier: Any) -> ProtectedResource:
    return ProtectedResource(RESOURCE, ["http://127.0.0.1"], verifier,
                             required_scopes=["mcp:read"])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_introspection_end_to_end(runtime: str) -> None:
    with authorization_server() as issuer:
        verifier = IntrospectionVerifier(issuer.url + "/introspect", client_id="rs",
                                         client_secret="s3cret", resource=RESOURCE)
        with serving(runtime, whoami_server(), auth=protected_by(verifier),
                     decision_timeout=TIMEOUT) as port:
            assert initialize(port, "good")[0] == 200
            assert initialize(port, "good")[0] == 200  # remembered: asked once
            assert issuer.introspections == 1
            status, headers = initialize(port, "inactive")
            assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
            assert initialize(port, "foreign")[0] == 401  # another resource's token
            assert initialize(port, "broken")[0] == 503  # no verdict (RFC 7662 §2.3)
            started = time.monotonic()
            assert initialize(port, "slow")[0] == 503  # the decision timeout
            assert time.monotonic() - started < GUARD  # answered, not hung


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_introspection_endpoint_that_is_down_is_a_503(runtime: str) -> None:
    verifier = IntrospectionVerifier(f"http://127.0.0.1:{closed_port()}/introspect",
                                     client_id="rs", client_secret="s3cret",
                                     resource=RESOURCE)
    with serving(runtime, whoami_server(), auth=protected_by(verifier),
                 decision_timeout=TIMEOUT) as port:
        status, headers = initialize(port, "good")
        assert status == 503 and "www-authenticate" not in headers


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_client_that_leaves_while_parked_leaves_the_server_well(runtime: str) -> None:
    with authorization_server() as issuer:
        verifier = IntrospectionVerifier(issuer.url + "/introspect", client_id="rs",
                                         client_secret="s3cret", resource=RESOURCE)
        with serving(runtime, whoami_server(), auth=protected_by(verifier),
                     decision_timeout=TIMEOUT) as port:
            conn = SyncConn(port)
            conn.send("POST", init_body(), {"authorization": "Bearer slow"})
            conn.sock.close()  # gone while its token is being introspected
            time.sleep(TIMEOUT * 1.5)  # past the decision timeout: nothing to answer
            assert initialize(port, "good")[0] == 200


def _key(kid: str) -> ECKey:
    return ECKey.generate_key("P-256", parameters={"kid": kid, "alg": "ES256"})


def _token(key: ECKey, issuer: str) -> str:
    claims = {"iss": issuer, "aud": RESOURCE, "sub": "ada", "scope": "mcp:read",
              "exp": int(time.time()) + 3600}
    return jwt.encode({"alg": "ES256", "kid": key.kid}, claims, key)


def _start(keeper: JWKSKeeper, runtime: str) -> None:
    """The keeper's first fetch, the way each runtime enters it."""
    if runtime == "threading":
        keeper.__enter__()
    elif runtime == "trio":
        trio.run(keeper.__aenter__)
    else:
        asyncio.run(keeper.__aenter__())


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_jwks_keeper_follows_a_key_rotation(runtime: str) -> None:
    old, new = _key("old"), _key("new")
    with authorization_server() as issuer:
        issuer.keys = [old]
        keeper = JWKSKeeper(issuer.url + "/jwks", issuer=issuer.url, audience=RESOURCE,
                            min_refetch=0.0)
        _start(keeper, runtime)
        assert issuer.jwks_fetches == 1  # before the first request
        with serving(runtime, whoami_server(), auth=protected_by(keeper),
                     decision_timeout=TIMEOUT) as port:
            assert initialize(port, _token(old, issuer.url))[0] == 200
            assert issuer.jwks_fetches == 1
            issuer.keys = [old, new]  # rotation: the next token is signed with the new key
            assert initialize(port, _token(new, issuer.url))[0] == 200
            assert issuer.jwks_fetches == 2 and keeper.fetches == 2
            stranger = _key("stranger")  # a made-up kid: asked once more, then refused
            assert initialize(port, _token(stranger, issuer.url))[0] == 401
