"""A loopback authorization server (and enterprise IdP) for the grants without a browser,
and our MCP server protecting itself with DPoP in front of it.

The authorization server checks what each grant must carry (client authentication by
``client_secret_basic``, ``client_secret_post`` or a ``private_key_jwt`` assertion; a
workload token; an ID-JAG from its IdP), binds tokens to the DPoP key of the token request's
proof (checked with our own :class:`~mcp_sansio.auth.dpop.ProofVerifier`, asking for a nonce
once when ``as_nonce`` is set) and issues ES256 JWT access tokens for the resource. It
records every token request, so tests assert what the client sent.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

from joserfc import jwt
from joserfc.jwk import ECKey

from mcp_sansio.auth import ProtectedResource
from mcp_sansio.auth.dpop import NonceSource, ProofVerifier
from mcp_sansio.auth.jwt import JWTVerifier

CLIENT_ID = "machine-1"
SECRET = "s3cret:with/odd chars"
IDP_CLIENT = "idp-client"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MachineAS:
    """The loopback authorization server + IdP (see the module docstring)."""

    def __init__(self, resource: str, *, as_nonce: bool = False,
                 expires_in: int = 3600) -> None:
        self.resource = resource
        self.signing = ECKey.generate_key("P-256", parameters={"kid": "as", "alg": "ES256"})
        self.client_key = ECKey.generate_key("P-256")     # the client's private_key_jwt key
        self.platform_key = ECKey.generate_key("P-256")   # the workload platform's key
        self.idp_key = ECKey.generate_key("P-256")        # the enterprise IdP's key
        self.expires_in = expires_in
        self.requests: list[dict[str, Any]] = []
        self.proofs = ProofVerifier(nonces=NonceSource(b"as-nonces") if as_nonce else None)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, doc: Any, headers: tuple[tuple[str, str], ...] = ()
                      ) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/.well-known/oauth-authorization-server":
                    self._send(200, outer.metadata())
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                dpop = self.headers.get_all("DPoP") or []
                record = {"path": self.path, "form": form, "dpop": dpop,
                          "authorization": self.headers.get("authorization")}
                outer.requests.append(record)
                status, doc, headers = outer.token(self.path, form, record)
                self._send(status, doc, headers)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> MachineAS:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def metadata(self) -> dict[str, Any]:
        return {"issuer": self.issuer, "token_endpoint": f"{self.issuer}/token",
                "authorization_endpoint": f"{self.issuer}/authorize",
                "grant_types_supported": ["client_credentials", JWT_BEARER],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic", "client_secret_post", "private_key_jwt"],
                "dpop_signing_alg_values_supported": ["ES256"]}

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.signing.as_dict(private=False)]}

    # -- the token endpoint and the IdP --------------------------------------------------

    def token(self, path: str, form: dict[str, str], record: dict[str, Any]
              ) -> tuple[int, dict[str, Any], tuple[tuple[str, str], ...]]:
        if path == "/idp/token":
            return self._exchange(form)
        grant = form.get("grant_type")
        client = self._client(form, record.get("authorization"))
        if grant == "client_credentials":
            if client is None:
                return 401, {"error": "invalid_client"}, ()
            subject = client
        elif grant == JWT_BEARER:
            subject = self._assertion(form.get("assertion", ""))
            if subject is None:
                return 400, {"error": "invalid_grant"}, ()
        else:
            return 400, {"error": "unsupported_grant_type"}, ()
        now = time.time()
        claims: dict[str, Any] = {"iss": self.issuer, "aud": self.resource, "sub": subject,
                                  "client_id": client or subject, "iat": int(now),
                                  "exp": int(now) + self.expires_in,
                                  "scope": form.get("scope", "")}
        token_type = "Bearer"
        if record["dpop"]:
            from mcp_sansio.auth.dpop import UseNonce

            try:
                proof = self.proofs.check(record["dpop"], method="POST",
                                          url=f"{self.issuer}/token", now=now,
                                          access_token=None)
            except UseNonce:
                assert self.proofs.nonces is not None
                return 400, {"error": "use_dpop_nonce"}, (
                    ("DPoP-Nonce", self.proofs.nonces.current(now)),)
            except Exception as exc:
                return 400, {"error": "invalid_dpop_proof", "error_description": str(exc)}, ()
            claims["cnf"] = {"jkt": proof.jkt}
            token_type = "DPoP"
        access = jwt.encode({"alg": "ES256", "kid": "as"}, claims, self.signing)
        return 200, {"access_token": access, "token_type": token_type,
                     "expires_in": self.expires_in, "scope": claims["scope"]}, ()

    def _client(self, form: dict[str, str], authorization: str | None) -> str | None:
        """The authenticated client id, by whichever method the request used."""
        if authorization and authorization.startswith("Basic "):
            raw = base64.b64decode(authorization[6:]).decode()
            cid, _, secret = raw.partition(":")
            return unquote(cid) if (unquote(cid), unquote(secret.replace("+", " "))) == (
                CLIENT_ID, SECRET) else None
        if "client_secret" in form:
            ok = (form.get("client_id"), form["client_secret"]) == (CLIENT_ID, SECRET)
            return CLIENT_ID if ok else None
        if form.get("client_assertion_type") == ASSERTION_TYPE:
            try:
                decoded = jwt.decode(form["client_assertion"], self.client_key)
            except Exception:
                return None
            c = decoded.claims
            fresh = c.get("exp", 0) > time.time() and isinstance(c.get("jti"), str)
            if c.get("iss") == c.get("sub") == CLIENT_ID and c.get("aud") == self.issuer \
                    and fresh:
                return CLIENT_ID
        return None

    def _assertion(self, assertion: str) -> str | None:
        """The subject of a JWT bearer assertion: a workload token or an ID-JAG."""
        for key, typ in ((self.platform_key, None), (self.idp_key, "oauth-id-jag+jwt")):
            try:
                decoded = jwt.decode(assertion, key)
            except Exception:
                continue
            if typ is not None and decoded.header.get("typ") != typ:
                return None
            c = decoded.claims
            if c.get("aud") != self.issuer or c.get("exp", 0) <= time.time():
                return None
            if typ is not None and c.get("resource") != self.resource:
                return None
            return str(c.get("sub"))
        return None

    def _exchange(self, form: dict[str, str]
                  ) -> tuple[int, dict[str, Any], tuple[tuple[str, str], ...]]:
        """RFC 8693 at the IdP: a valid ID token for an ID-JAG."""
        if (form.get("grant_type") != TOKEN_EXCHANGE
                or form.get("requested_token_type")
                != "urn:ietf:params:oauth:token-type:id-jag"
                or form.get("subject_token_type")
                != "urn:ietf:params:oauth:token-type:id_token"):
            return 400, {"error": "invalid_request"}, ()
        try:
            id_token = jwt.decode(form.get("subject_token", ""), self.idp_key).claims
        except Exception:
            return 400, {"error": "invalid_grant"}, ()
        now = int(time.time())
        jag = jwt.encode({"alg": "ES256", "typ": "oauth-id-jag+jwt"},
                         {"iss": "idp", "sub": id_token["sub"], "aud": form.get("audience"),
                          "resource": form.get("resource"), "client_id": CLIENT_ID,
                          "iat": now, "exp": now + 300, "jti": f"jag-{now}"}, self.idp_key)
        return 200, {"access_token": jag, "token_type": "N_A",
                     "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"}, ()

    # -- tokens a test hands the client ----------------------------------------------------

    def platform_token(self, sub: str = "workload-7", *, ttl: int = 600) -> str:
        now = int(time.time())
        return jwt.encode({"alg": "ES256"}, {"iss": "platform", "sub": sub, "aud": self.issuer,
                                             "iat": now, "exp": now + ttl}, self.platform_key)

    def id_token(self, sub: str = "ada@example.com") -> str:
        now = int(time.time())
        return jwt.encode({"alg": "ES256"}, {"iss": "idp", "sub": sub, "aud": IDP_CLIENT,
                                             "iat": now, "exp": now + 600}, self.idp_key)

    def token_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == "/token"]


def protected(world: MachineAS, *, dpop: str | None = "required",
              rs_nonce: bool = False) -> ProtectedResource:
    verifier = JWTVerifier(world.jwks(), issuer=world.issuer, audience=world.resource)
    proofs = ProofVerifier(nonces=NonceSource(b"rs-nonces") if rs_nonce else None)
    return ProtectedResource(world.resource, [world.issuer], verifier, dpop=dpop,
                             dpop_proofs=proofs if dpop else None)


@contextlib.contextmanager
def machine_world(**options: Any) -> Iterator[tuple[MachineAS, int]]:
    """An authorization server for ``http://127.0.0.1:PORT/mcp``; (server, PORT)."""
    port = free_port()
    with MachineAS(f"http://127.0.0.1:{port}/mcp", **options) as world:
        yield world, port
