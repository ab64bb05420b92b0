"""Carrying the OAuth client flow's requests on asyncio: fetch, the user step, token storage.

Theory of operation
-------------------
:class:`mcp_sansio.auth.OAuthClientFlow` decides everything and performs nothing. This module
is the I/O it leaves out, on asyncio:

* :func:`fetch` makes one :class:`~mcp_sansio.auth.HTTPRequest` on a fresh connection (h11
  over ``asyncio.open_connection``, TLS for ``https``), reads at most the request's
  ``max_response_bytes`` (+1, so that the flow sees the excess and names it), and never
  follows a redirect -- the flow does that itself, bounded;
* :func:`run_flow` answers the flow's actions until it is done: requests with :func:`fetch`,
  the user step with an ``authorize`` callable the application gives;
* two ``authorize`` callables: :class:`LoopbackRedirect` (open the browser, wait for the
  authorization server to send it back to a one-shot listener on 127.0.0.1, as RFC 8252
  §7.3 describes for native apps) and :func:`follow_redirect` (for an authorization server
  that approves without a user -- test servers and the conformance harness's mocks: GET the
  URL and take the ``Location`` it redirects to);
* :class:`FileStorage`, a :class:`~mcp_sansio.auth.TokenStorage` in a JSON file readable
  only by its owner (tokens are secrets: never logged beyond a short prefix).

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import h11

from mcp_sansio.auth import (
    AuthFlowError,
    Authorized,
    ClientCredentials,
    HTTPRequest,
    HTTPResponse,
    OAuthClientFlow,
    Tokens,
    UserAuthorization,
)

__all__ = ["DEFAULT_FETCH_TIMEOUT", "FileStorage", "LoopbackListener", "LoopbackRedirect",
           "TokenFile", "fetch", "fetch_sync", "follow_redirect", "follow_redirect_sync",
           "new_dpop_key", "run_flow", "run_flow_sync"]

log = logging.getLogger("mcp_sansio.auth")

#: Seconds one request of the flow may take, connection included: 30 s. Metadata and token
#: endpoints answer in milliseconds; a server that takes longer is down, and the flow must
#: end with an error rather than hang (never a hang).
DEFAULT_FETCH_TIMEOUT = 30.0
#: Seconds the loopback listener waits for the browser to come back: 5 minutes, time for a
#: user to log in and consent; after that the attempt is abandoned.
DEFAULT_USER_TIMEOUT = 300.0
_READ_SIZE = 65536


def _short(secret: str) -> str:
    return secret[:6] + "..." if len(secret) > 6 else "..."


async def fetch(request: HTTPRequest, *, timeout: float = DEFAULT_FETCH_TIMEOUT,
                ssl_context: ssl.SSLContext | None = None) -> HTTPResponse:
    """Make ``request`` and return the response (body cut at ``max_response_bytes`` + 1).

    :raises AuthFlowError: (step ``transport``) the server could not be reached, broke the
        HTTP framing, or did not answer within ``timeout``.
    """
    try:
        async with asyncio.timeout(timeout):
            return await _fetch(request, ssl_context)
    except (OSError, TimeoutError, h11.ProtocolError, ValueError) as exc:
        # The URL without its query: an authorization URL's query is for the browser only.
        raise AuthFlowError("transport", request.url.split("?", 1)[0],
                            f"{request.method} failed: {type(exc).__name__}: {exc}") from None


async def _fetch(request: HTTPRequest, ssl_context: ssl.SSLContext | None) -> HTTPResponse:
    parts = urlsplit(request.url)
    secure = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if secure else 80)
    context = (ssl_context or ssl.create_default_context()) if secure else None
    reader, writer = await asyncio.open_connection(
        host, port, ssl=context, server_hostname=host if secure else None)
    try:
        conn = h11.Connection(h11.CLIENT)
        writer.write(_request_bytes(conn, request))
        await writer.drain()
        reading = _Reading(conn, request)
        while reading.needs_data():
            conn.receive_data(await reader.read(_READ_SIZE))
        return reading.response()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def _request_bytes(conn: h11.Connection, request: HTTPRequest) -> bytes:
    parts = urlsplit(request.url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    headers = [("Host", parts.netloc), ("Connection", "close"), ("User-Agent", "mcp-sansio")]
    headers += [(k, v) for k, v in request.headers if k.lower() != "host"]
    if request.body or request.method in ("POST", "PUT"):
        headers.append(("Content-Length", str(len(request.body))))
    out = conn.send(h11.Request(method=request.method, target=target, headers=headers)) or b""
    if request.body:
        out += conn.send(h11.Data(data=request.body)) or b""
    return out + (conn.send(h11.EndOfMessage()) or b"")


class _Reading:
    """One response read through h11, the body cut at ``max_response_bytes`` + 1 (the flow
    sees the excess and names it; no need to read the rest)."""

    def __init__(self, conn: h11.Connection, request: HTTPRequest) -> None:
        self.conn = conn
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()
        self.limit = request.max_response_bytes + 1

    def needs_data(self) -> bool:
        """Process what h11 holds; True while more bytes are needed."""
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                return True
            if isinstance(event, h11.Response):
                self.status = event.status_code
                self.headers = [(k.decode("latin-1"), v.decode("latin-1"))
                                for k, v in event.headers]
            elif isinstance(event, h11.Data):
                self.body += event.data
                if len(self.body) >= self.limit:
                    return False
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return False

    def response(self) -> HTTPResponse:
        return HTTPResponse(self.status, tuple(self.headers), bytes(self.body[:self.limit]))


def fetch_sync(request: HTTPRequest, *, timeout: float = DEFAULT_FETCH_TIMEOUT,
               ssl_context: ssl.SSLContext | None = None) -> HTTPResponse:
    """:func:`fetch`, blocking: the whole request (connection included) within ``timeout``.

    :raises AuthFlowError: (step ``transport``) as :func:`fetch`.
    """
    parts = urlsplit(request.url)
    deadline = time.monotonic() + timeout
    try:
        secure = parts.scheme == "https"
        host = parts.hostname or ""
        sock = socket.create_connection((host, parts.port or (443 if secure else 80)),
                                        timeout=timeout)
        with contextlib.ExitStack() as stack:
            stack.callback(sock.close)
            if secure:
                context = ssl_context or ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=host)
                stack.callback(sock.close)
            conn = h11.Connection(h11.CLIENT)
            sock.sendall(_request_bytes(conn, request))
            reading = _Reading(conn, request)
            while reading.needs_data():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no complete answer within {timeout:g} s")
                sock.settimeout(left)
                conn.receive_data(sock.recv(_READ_SIZE))
            return reading.response()
    except (OSError, h11.ProtocolError, ValueError) as exc:  # TimeoutError is an OSError
        raise AuthFlowError("transport", request.url.split("?", 1)[0],
                            f"{request.method} failed: {type(exc).__name__}: {exc}") from None


Authorize = Callable[[UserAuthorization], Awaitable[str]]
Fetch = Callable[[HTTPRequest], Awaitable[HTTPResponse]]


async def run_flow(flow: OAuthClientFlow, challenge: HTTPResponse | None,
                   authorize: Authorize, *, fetcher: Fetch = fetch,
                   clock: Callable[[], float] = time.time) -> Tokens:
    """Run ``flow`` from ``challenge`` (None: before a request) to its tokens.

    :raises AuthFlowError: as the flow, and for requests that could not be made.
    """
    action = flow.start(clock(), challenge)
    while not isinstance(action, Authorized):
        if isinstance(action, HTTPRequest):
            log.debug("auth: %s %s", action.method, action.url)
            response = await fetcher(action)
            action = flow.receive_response(response, clock())
        else:
            log.info("auth: authorization needed at %s", action.url.split("?", 1)[0])
            redirect = await authorize(action)
            action = flow.receive_redirect(redirect, clock())
    log.info("auth: authorized for %s by %s (token %s)", action.tokens.resource,
             action.tokens.issuer, _short(action.tokens.access_token))
    return action.tokens


def run_flow_sync(flow: OAuthClientFlow, challenge: HTTPResponse | None,
                  authorize: Callable[[UserAuthorization], str], *,
                  fetcher: Callable[[HTTPRequest], HTTPResponse] = fetch_sync,
                  clock: Callable[[], float] = time.time) -> Tokens:
    """:func:`run_flow`, blocking (``authorize`` and ``fetcher`` blocking too)."""
    action = flow.start(clock(), challenge)
    while not isinstance(action, Authorized):
        if isinstance(action, HTTPRequest):
            log.debug("auth: %s %s", action.method, action.url)
            action = flow.receive_response(fetcher(action), clock())
        else:
            log.info("auth: authorization needed at %s", action.url.split("?", 1)[0])
            action = flow.receive_redirect(authorize(action), clock())
    log.info("auth: authorized for %s by %s (token %s)", action.tokens.resource,
             action.tokens.issuer, _short(action.tokens.access_token))
    return action.tokens


def _redirect_target(action: UserAuthorization, response: HTTPResponse) -> str:
    location = response.header("Location")
    if response.status not in (301, 302, 303, 307, 308) or not location:
        raise AuthFlowError("authorization", action.url.split("?", 1)[0],
                            f"expected a redirect back to the client, got {response.status}")
    return urljoin(action.url, location)


async def follow_redirect(action: UserAuthorization, *, fetcher: Fetch = fetch) -> str:
    """The user step for an authorization server that approves at once: GET the
    authorization URL and return where it redirects the browser to."""
    return _redirect_target(action, await fetcher(HTTPRequest("GET", action.url)))


def follow_redirect_sync(action: UserAuthorization) -> str:
    """:func:`follow_redirect`, blocking."""
    return _redirect_target(action, fetch_sync(HTTPRequest("GET", action.url)))


class LoopbackRedirect:
    """A one-shot listener on 127.0.0.1 for the authorization server's redirect (RFC 8252
    §7.3). Use :attr:`redirect_uri` in :class:`~mcp_sansio.auth.ClientConfig`, then pass the
    instance as ``authorize`` to :func:`run_flow`: it calls ``open_browser(url)`` and waits
    for the browser to come back."""

    def __init__(self, open_browser: Callable[[str], Any], *, port: int = 0,
                 path: str = "/callback", timeout: float = DEFAULT_USER_TIMEOUT) -> None:
        self.open_browser = open_browser
        self.path = path
        self.timeout = timeout
        self._port = port
        self._server: asyncio.Server | None = None
        self._got: asyncio.Future[str] | None = None

    async def __aenter__(self) -> LoopbackRedirect:
        self._got = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self._port)
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self._port}{self.path}"

    async def __call__(self, action: UserAuthorization) -> str:
        assert self._got is not None, "use LoopbackRedirect as an async context manager"
        result = self.open_browser(action.url)
        if asyncio.iscoroutine(result):
            await result
        try:
            async with asyncio.timeout(self.timeout):
                return await asyncio.shield(self._got)
        except TimeoutError:
            raise AuthFlowError("authorization-response", self.redirect_uri,
                                f"the browser did not come back within {self.timeout:g} s"
                                ) from None

    async def _serve(self, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            async with asyncio.timeout(DEFAULT_FETCH_TIMEOUT):
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(await reader.read(_READ_SIZE))
                        continue
                    break
            if not isinstance(event, h11.Request):
                return
            target = event.target.decode("latin-1")
            ok = urlsplit(target).path == self.path and event.method == b"GET"
            text = (b"Authorization complete: you can close this window." if ok
                    else b"Not found.")
            writer.write(conn.send(h11.Response(
                status_code=200 if ok else 404,
                headers=[("Content-Type", "text/plain; charset=utf-8"),
                         ("Content-Length", str(len(text))), ("Connection", "close")])) or b"")
            writer.write(conn.send(h11.Data(data=text)) or b"")
            writer.write(conn.send(h11.EndOfMessage()) or b"")
            await writer.drain()
            if ok and self._got is not None and not self._got.done():
                self._got.set_result(self.redirect_uri.split(self.path, 1)[0] + target)
        except (OSError, TimeoutError, h11.ProtocolError):
            return
        finally:
            writer.close()


class LoopbackListener:
    """The one-shot 127.0.0.1 listener of RFC 8252 §7.3 as a blocking callable, for every
    runtime: the socket is bound when the object is made (so :attr:`redirect_uri`, with
    its port, goes into :class:`~mcp_sansio.auth.ClientConfig` before the flow registers);
    calling it with the :class:`~mcp_sansio.auth.UserAuthorization` calls
    ``open_browser(url)`` and waits (at most ``timeout`` seconds) for the browser to come
    back. Requests for another path are answered 404 and the wait goes on."""

    def __init__(self, open_browser: Callable[[str], Any], *, port: int = 0,
                 path: str = "/callback", timeout: float = DEFAULT_USER_TIMEOUT) -> None:
        self.open_browser = open_browser
        self.path = path
        self.timeout = timeout
        self._sock = socket.create_server(("127.0.0.1", port))
        self.port: int = self._sock.getsockname()[1]

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> LoopbackListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, action: UserAuthorization) -> str:
        self.open_browser(action.url)
        deadline = time.monotonic() + self.timeout
        while (left := deadline - time.monotonic()) > 0:
            self._sock.settimeout(left)
            try:
                peer, _ = self._sock.accept()
            except TimeoutError:
                break
            with peer:
                target = self._answer(peer, deadline)
            if target is not None:
                return f"http://127.0.0.1:{self.port}{target}"
        raise AuthFlowError("authorization-response", self.redirect_uri,
                            f"the browser did not come back within {self.timeout:g} s")

    def _answer(self, peer: socket.socket, deadline: float) -> str | None:
        """Read one request; the target if it is the redirect, else None (answered 404)."""
        conn = h11.Connection(h11.SERVER)
        try:
            peer.settimeout(min(DEFAULT_FETCH_TIMEOUT, max(deadline - time.monotonic(), 0.1)))
            while (event := conn.next_event()) is h11.NEED_DATA:
                conn.receive_data(peer.recv(_READ_SIZE))
            if not isinstance(event, h11.Request):
                return None
            target = event.target.decode("latin-1")
            ok = urlsplit(target).path == self.path and event.method == b"GET"
            text = (b"Authorization complete: you can close this window." if ok
                    else b"Not found.")
            peer.sendall((conn.send(h11.Response(
                status_code=200 if ok else 404,
                headers=[("Content-Type", "text/plain; charset=utf-8"),
                         ("Content-Length", str(len(text))), ("Connection", "close")])) or b"")
                + (conn.send(h11.Data(data=text)) or b"")
                + (conn.send(h11.EndOfMessage()) or b""))
            return target if ok else None
        except (OSError, h11.ProtocolError):
            return None


def new_dpop_key() -> dict[str, Any]:
    """A fresh EC P-256 private JWK for DPoP (ES256, RFC 9449 §4.2), from the OS's
    randomness (joserfc, the ``auth`` extra)."""
    from joserfc.jwk import ECKey  # lazy: the auth extra

    return ECKey.generate_key("P-256", private=True).as_dict(private=True)


class TokenFile:
    """A token in a file that a platform rotates (a workload identity token, e.g. a
    projected service-account token): read when first asked, and again whenever the
    file's modification time or size changed; surrounding whitespace dropped. Pass it as
    :class:`~mcp_sansio.auth.JWTBearerGrant` ``assertion``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int] | None = None
        self._token = ""

    def __call__(self, now: float = 0.0) -> str:
        try:
            info = self.path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
            if stamp != self._stamp:
                self._token = self.path.read_text().strip()
                self._stamp = stamp
        except OSError as exc:
            raise AuthFlowError("token", str(self.path),
                                f"cannot read the token file: {exc.strerror or exc}") from None
        if not self._token:
            raise AuthFlowError("token", str(self.path), "the token file is empty")
        return self._token


class FileStorage:
    """A :class:`~mcp_sansio.auth.TokenStorage` in one JSON file (mode 0600), for CLIs.

    Every change rewrites the file atomically (a temporary file renamed over it), so a
    crash leaves the old or the new content, never half of it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._data: dict[str, Any] = {"clients": {}, "tokens": {}, "issuers": {}}
        with contextlib.suppress(FileNotFoundError):
            loaded = json.loads(self.path.read_text())
            if isinstance(loaded, dict):
                for key in self._data:
                    if isinstance(loaded.get(key), dict):
                        self._data[key] = loaded[key]

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(self._data, out)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def get_client(self, issuer: str) -> ClientCredentials | None:
        data = self._data["clients"].get(issuer)
        return ClientCredentials.from_json(data) if isinstance(data, dict) else None

    def set_client(self, issuer: str, credentials: ClientCredentials | None) -> None:
        if credentials is None:
            self._data["clients"].pop(issuer, None)
        else:
            self._data["clients"][issuer] = credentials.to_json()
        self._save()

    def get_tokens(self, issuer: str, resource: str) -> Tokens | None:
        data = self._data["tokens"].get(f"{issuer} {resource}")
        return Tokens.from_json(data) if isinstance(data, dict) else None

    def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        key = f"{issuer} {resource}"
        if tokens is None:
            if self._data["tokens"].pop(key, None) is None:
                return
        else:
            self._data["tokens"][key] = tokens.to_json()
        self._save()

    def get_issuer(self, resource: str) -> str | None:
        issuer = self._data["issuers"].get(resource)
        return issuer if isinstance(issuer, str) else None

    def set_issuer(self, resource: str, issuer: str) -> None:
        if self._data["issuers"].get(resource) != issuer:
            self._data["issuers"][resource] = issuer
            self._save()
