"""The MCP server as an ASGI 3 application, for uvicorn, hypercorn, granian, Starlette, FastAPI.

Theory of operation
-------------------
:class:`ASGIApp` serves Streamable HTTP (both eras, and the legacy HTTP+SSE endpoints when
asked) the way our own HTTP servers do, with the ASGI server doing the HTTP/1.1 (or 2)
parsing. Each ``http`` scope is one request: its head (method, path relative to the mount
point plus the query string, headers, HTTP version) and its ``http.request`` body chunks are
fed, as they arrive, to a :class:`~mcp_sansio.http.ServerChannel` on the parser-neutral
exchange (:mod:`mcp_sansio.http._exchange`); the answer comes back as exchange events, sent
as ``http.response.start`` and ``http.response.body`` (``more_body`` for every piece of an
SSE stream). The body is read by the request's own coroutine (a POST is handled once its
body has ended); an answer queued whole by then (a JSON answer, a refusal) is sent at once,
and only an answer still being made (a handler that awaits, an SSE stream) gets a task
watching ``receive`` and a cancel scope -- per-request task machinery was most of this
adapter's cost (``benchmarks/asgi.py``). ``http.disconnect`` is the client leaving: the
request's stream is detached from it (in 2026-07-28, where a request lives on its stream,
that cancels the request; in the handshake era a resumable stream's events wait for
``Last-Event-ID``). One sans-IO :class:`~mcp_sansio.http.HTTPServer` serves every request
of the worker process, its timers armed on the running loop (``adapters/asgi/service.py``).

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

import anyio
import sniffio

from mcp_sansio import KeyRing
from mcp_sansio.app.server import Server
from mcp_sansio.http import HTTPServer
from mcp_sansio.http._exchange import (
    CloseConnection,
    ExchangeInput,
    PeerClosed,
    RequestData,
    RequestEnded,
    RequestStarted,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from mcp_sansio.http._head_rules import is_http10
from mcp_sansio.http._headers import Headers

from ..common.http_server import new_http_server
from ..stores.keys import DEFAULT_KEY_REFRESH_INTERVAL, StoreKeys
from .guard import UNFRAMED, Unframed, answer, drain, refusal
from .service import EventHandler, Exchange, Routing, new_service

__all__ = ["DEFAULT_MAX_WRITE_BUFFER", "ASGIApp", "app", "http_app"]

log = logging.getLogger("mcp_sansio.adapters.asgi")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: Response bytes queued for one request that its client has not read before the request is
#: dropped: 16 MiB, as on our own sockets (far above any one answer; a client that does not
#: read an SSE stream is stuck).
DEFAULT_MAX_WRITE_BUFFER = 16 * 1024 * 1024

#: Header fields that belong to one HTTP/1.1 connection (RFC 9110 section 7.6.1); HTTP/2 and
#: HTTP/3 forbid them (RFC 9113 section 8.2.2), so they are dropped from answers there.
_CONNECTION_FIELDS = frozenset({b"connection", b"keep-alive", b"transfer-encoding"})
#: Characters left as they are when a decoded path is encoded again (RFC 3986 section 3.3).
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_ENDED = RequestEnded()
_GONE = PeerClosed()


class ASGIApp:
    """An ASGI 3 application serving an MCP server (module docstring).

    Build it from a high-level :class:`~mcp_sansio.app.server.Server` (what
    :func:`app` does) or from a bare sans-IO :class:`~mcp_sansio.http.HTTPServer` and a
    handler of its events (:func:`http_app`).

    :param max_write_buffer: response bytes queued for a client that does not read before
        its request is dropped (:data:`DEFAULT_MAX_WRITE_BUFFER`).
    :param stores: the shared stores (or a Redis URL) of an ``http`` built with
        ``shared=True`` and a ``stream_tag`` (:func:`app` builds both; module docstring).
    """

    def __init__(self, http: HTTPServer, *, server: Server | None = None,
                 on_event: EventHandler | None = None,
                 max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
                 stores: Any = None,
                 key_refresh_interval: float = DEFAULT_KEY_REFRESH_INTERVAL) -> None:
        if (server is None) == (on_event is None):
            raise TypeError("give exactly one of server= and on_event=")
        if stores is not None and not http.shared:
            raise ValueError("stores= needs an HTTP server built with shared=True")
        #: The shared stores (an object with ``sessions``, ``events``, ``bus``, ``keys``), or
        #: a Redis URL each worker builds them from; None: nothing shared.
        self.stores = stores
        #: Filled with the store's key ring at the start (None: the keys were given).
        self._store_keys: _LateKeys | None = None
        self._key_refresh_interval = key_refresh_interval
        # The process the stream tag was drawn in (None: the caller chose the tag).
        self._tag_pid: int | None = None
        self._owned_stores: Any = None  # built from a URL stores: this worker's to close
        self._owned_token: object = None  # the loop they were built on
        self._off_loop: Any = None  # trio: the store thread's share (stores/home.py)
        #: The sans-IO HTTP server (one per worker process).
        self.http = http
        self.server = server
        self.max_write_buffer = max_write_buffer
        self._on_event = on_event
        self._service: Routing | None = None
        self._token: object = None  # the loop (or trio run) the service belongs to
        self._starting: anyio.Event | None = None
        self._library = ""  # the service's async library
        # The running loop, with an asyncio service (asyncio.get_running_loop): a request on
        # the service's loop needs no sniffio lookup (_http); None without one.
        self._running_loop: Callable[[], object] = _no_loop

    # -- what a deployment needs -------------------------------------------------------------

    @property
    def well_known_paths(self) -> tuple[str, ...]:
        """Paths (from the host's root) of the protected-resource metadata, when the server
        has ``auth``: route them to this application too when it is mounted at a prefix."""
        auth = self.http.auth
        return auth.metadata_paths if auth is not None else ()

    def wake(self) -> None:
        """For a bare HTTP server's handler that answered outside a dispatch (after
        ``session.flush()``): route what it sent now."""
        if self._service is not None:
            self._service.wake()

    async def aclose(self) -> None:
        """Cancel the handlers still running and forget the service (the ``lifespan``
        shutdown does this)."""
        service, self._service, self._token = self._service, None, None
        self._running_loop = _no_loop
        if service is not None:
            await service.aclose()
        off_loop, self._off_loop = self._off_loop, None
        if off_loop is not None:  # trio: the goodbye, the task records (stores/home.py)
            await anyio.to_thread.run_sync(off_loop.close, self.server)
            return
        if self.stores is not None:  # the last task records written before the stores close
            from ..stores.tasks import close_sharing  # lazy: shared stores only

            await close_sharing(self.server)
        owned, self._owned_stores = self._owned_stores, None
        if owned is not None:
            await owned.aclose()

    # -- ASGI --------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":  # MCP has no WebSocket transport: the handshake is refused
            await send({"type": "websocket.close", "code": 1000})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._ensure()
                except Exception as exc:
                    log.exception("the MCP ASGI application could not start")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _ensure(self) -> Routing:
        """The service of the running loop, started on first use."""
        library = sniffio.current_async_library()
        token = _loop_token(library)
        while self._starting is not None:  # another request is starting it
            await self._starting.wait()
        service = self._service
        if service is not None and self._token is token:
            return service
        self._starting = starting = anyio.Event()
        try:
            # A service of another loop (an application reused across asyncio.run calls,
            # as tests do) is dropped: its tasks and timers belong to that loop.
            old = getattr(self._service, "_shared", None)
            off_loop, self._off_loop = self._off_loop, None
            if off_loop is not None:  # a trio run's share (stores/home.py): closed there
                await anyio.to_thread.run_sync(off_loop.close, self.server)
                old = None
            if old is not None:
                # Its bus subscriptions would hand this server every message twice: ended
                # (best effort: what it holds of the other loop cannot be awaited here).
                with contextlib.suppress(Exception):
                    await old.aclose()
            service = new_service(library, self.server, self.http,
                                  max_write_buffer=self.max_write_buffer,
                                  on_event=self._on_event)
            await service.start()
            if self.stores is not None:
                await self._share(service, token)
            self._service, self._token, self._library = service, token, library
            self._running_loop = _asyncio_running_loop() if library == "asyncio" else _no_loop
            return service
        finally:
            self._starting = None
            starting.set()

    async def _share(self, service: Routing, token: object) -> None:
        """Start shared mode on the running loop (module docstring)."""
        from ..stores.driver import SharedDriver  # lazy: shared stores only
        from ..stores.keys import store_key_ring  # lazy: shared stores only

        if self._tag_pid is not None and self._tag_pid != os.getpid():
            # Built before a fork: each worker process needs a tag of its own (a stream id,
            # a server request id names the worker that writes it).
            self.http.stream_tag, self._tag_pid = secrets.token_hex(4), os.getpid()
        if sniffio.current_async_library() == "trio":  # on a store thread (stores/home.py)
            from ..stores.home import share_on_trio

            self._off_loop = await share_on_trio(
                self.server, self.http, service, self.stores, keys=self._store_keys is not None,
                key_refresh_interval=self._key_refresh_interval)
            if self._store_keys is not None:
                self._store_keys.source = self._off_loop.key_source
            return
        stores = self.stores
        if isinstance(stores, str):
            if self._owned_stores is None or self._owned_token is not token:
                # (Stores of another loop -- an application reused across asyncio.run
                # calls without its shutdown -- hold connections of that loop: new ones.)
                from ..redis import RedisStores

                self._owned_stores = RedisStores.from_url(stores)
                self._owned_token = token
            stores = self._owned_stores
        source = None
        if self._store_keys is not None:
            _, source = await store_key_ring(stores,
                                             refresh_interval=self._key_refresh_interval)
            self._store_keys.source = source
        driver = SharedDriver(self.http, stores, service._safe_pump,  # type: ignore[attr-defined]
                              keys=source)
        service._shared = driver  # type: ignore[attr-defined]
        await driver.start()
        share_tasks = getattr(getattr(self.server, "tasks", None), "share", None)
        if share_tasks is not None:  # the server's tasks on every worker
            share_tasks(stores)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The hardening rules the head breaks, before anything is read (asgi/guard.py).
        refused = refusal(self.http, scope)
        if refused is not None:
            await answer(refused, scope, receive, send)
            return
        service = self._service
        try:
            fresh = (service is None or self._starting is not None
                     or self._running_loop() is not self._token)
        except RuntimeError:  # no asyncio loop here (an application reused on trio)
            fresh = True
        if fresh or service is None:
            service = await self._ensure()
        channel = service.new_channel()
        exchange = Exchange(channel)
        service._exchanges[channel] = exchange
        version = scope.get("http_version", "1.1")
        http2 = version not in ("1.0", "1.1")
        answered = False  # the whole answer went to the ASGI server
        try:
            # The body is read here, without a task: a POST is handled once its body has
            # ended (or refused, 413, before), so nothing is answered while it streams. The
            # head goes in with the first body message (one pump for a body in one piece).
            started = RequestStarted(
                method=scope["method"], target=self._target(scope),
                headers=Headers(list(scope.get("headers") or ())),
                http_version=version)
            try:
                cut = await _read_body(service, channel, receive, started)
            except Unframed:
                exchange.drop()
                with contextlib.suppress(Exception):  # (a client that left reads nothing)
                    await answer(UNFRAMED, scope, receive, send, linger=False)
                return
            if cut is None:
                return  # the client left first (PeerClosed fed): nothing to send
            # A body refused while it streamed (413): the rest is read and discarded after
            # the answer, so that the client reads it (asgi/guard.py); HTTP/1.0 has no
            # chunked coding, so a streamed answer goes out whole, with its length.
            linger = receive if cut else None
            whole = is_http10(version)
            if _complete(exchange):
                # The whole answer is queued (a JSON answer given at once, a refusal): sent
                # with no task watching for ``http.disconnect`` and no cancel scope (nothing
                # more is queued, so it cannot be dropped now) -- a task group per request
                # was most of this adapter's own cost (benchmarks/asgi.py).
                if not exchange.gone:
                    answered = await _respond(service, exchange, send, http2, whole=whole,
                                              linger=linger)
                return
            with exchange.scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(_watch, service, channel, receive)
                    answered = await _respond(service, exchange, send, http2, whole=whole)
                    group.cancel_scope.cancel()
        finally:
            service._exchanges.pop(channel, None)
            if not channel.closed and not (answered and exchange.idle()):
                # The request is over for this application (answered, or given up on): its
                # channel is released, and a stream still on it detached. (An answered
                # request whose channel holds nothing -- no stream, no request in progress --
                # is simply forgotten: a PeerClosed would change nothing but cost a pump.
                # The asyncio service's feed never suspends, so only trio's needs the shield.)
                if self._library == "asyncio":
                    await service.feed(channel, _GONE)
                else:
                    with anyio.CancelScope(shield=True):
                        await service.feed(channel, _GONE)

    def _target(self, scope: Scope) -> str:
        """The request-target for the HTTP server: the path below the mount point (or the
        whole path for the metadata's well-known paths) and the query string."""
        path: str = scope.get("path") or "/"
        root: str = scope.get("root_path") or ""
        if root and path not in self.well_known_paths and path.startswith(root):
            relative = path[len(root):] or "/"
        else:
            relative, root = path, ""
        raw = scope.get("raw_path")
        target = None
        if raw:
            # raw_path keeps the client's percent-encoding; it may or may not include the
            # prefix (a proxy that strips the prefix leaves it out).
            wire = raw.decode("latin-1")
            decoded = unquote(wire)
            if decoded == relative:
                target = wire
            elif root and decoded == path and wire.startswith(quote(root, safe=_PATH_SAFE)):
                target = wire[len(quote(root, safe=_PATH_SAFE)):] or "/"
        if target is None:
            target = quote(relative, safe=_PATH_SAFE + "%")
        query: bytes = scope.get("query_string") or b""
        return f"{target}?{query.decode('latin-1')}" if query else target


class _LateKeys:
    """The :class:`~mcp_sansio.KeySource` of a shared application's ring before its start:
    nothing until the store's ring is read at the start (then whatever it answers)."""

    def __init__(self) -> None:
        self.source: StoreKeys | None = None

    def keys(self) -> Sequence[bytes]:
        # The source's own object: the ring skips its comparison while it is unchanged.
        return self.source.keys() if self.source is not None else ()


def _no_loop() -> object:
    return None


def _asyncio_running_loop() -> Callable[[], object]:
    import asyncio  # lazy: that runtime only: the others never load asyncio

    return asyncio.get_running_loop


def _loop_token(library: str) -> object:
    if library == "asyncio":
        import asyncio  # lazy: that runtime only: the others never load asyncio

        return asyncio.get_running_loop()
    import trio  # lazy: trio is optional

    return trio.lowlevel.current_root_task()


async def _read_body(service: Routing, channel: Any, receive: Receive,
                     started: RequestStarted) -> bool | None:
    """Feed the request head and body as it arrives, until it ends (False) or is refused
    (413: True, the rest is not read); None when the client left first. :class:`Unframed`
    when the engine could not frame the body."""
    head: tuple[RequestStarted, ...] = (started,)
    while True:
        try:
            message = await receive()
        except Exception as exc:  # engines raise their own kinds for a body they cannot read
            raise Unframed(str(exc)) from exc
        kind = message.get("type")
        if kind == "http.request":
            body = message.get("body") or b""
            events: tuple[ExchangeInput, ...] = head
            head = ()
            if body:
                events += (RequestData(bytes(body)),)
            more = message.get("more_body", False)
            if not more:
                events += (_ENDED,)
            if events and not channel.closed:
                await service.feed(channel, *events)
            if not more or channel.closed:
                return bool(more)
        elif kind == "http.disconnect":
            if head:
                await service.feed(channel, *head)
            if not channel.closed:
                await service.feed(channel, _GONE)
            headers = started.headers
            if "transfer-encoding" in headers or (
                    headers.get("content-length") or "0").strip() != "0":
                # Before the body's end: the client left, or the engine could not frame
                # the body (granian says so this way); the 400 goes nowhere in the first.
                raise Unframed("the body ended before its framing did")
            return None


async def _watch(service: Routing, channel: Any, receive: Receive) -> None:
    """After the body: wait for the client to leave (``http.disconnect``) while the answer
    is being made or streamed."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            if not channel.closed:
                await service.feed(channel, _GONE)
            return


def _complete(exchange: Exchange) -> bool:
    """The answer is queued whole: nothing is left to wait for."""
    out = exchange.out
    return bool(out) and isinstance(out[-1], (ResponseEnded, CloseConnection))


async def _respond(service: Routing, exchange: Exchange, send: Send, http2: bool, *,
                   whole: bool = False, linger: Receive | None = None) -> bool:
    """Send the request's answer as it comes; return once it is complete (True) or cut
    short (False).
    ``whole``: a streamed answer is gathered and sent with its length (HTTP/1.0, which has
    no chunked coding: RFC 9112 section 6.1); ``linger``: the request's ``receive``, whose
    unread body is drained before the answer ends (asgi/guard.py)."""
    out = exchange.out
    if whole:
        await _gather(exchange)
    while True:
        if not out:
            if exchange.gone:
                return False
            await exchange.wait()
            continue
        event = out.popleft()
        message: Message
        last = False
        if isinstance(event, ResponseStarted):
            headers = []
            length = event.content_length
            for k, v in event.headers:
                name = k.lower().encode("latin-1")
                if name == b"content-length":
                    length = None  # given already
                elif http2 and name in _CONNECTION_FIELDS:
                    continue
                headers.append((name, v.encode("latin-1")))
            if length is not None:
                headers.append((b"content-length", str(length).encode()))
            message = {"type": "http.response.start", "status": event.status,
                       "headers": headers}
        elif isinstance(event, ResponseData):
            exchange.queued -= len(event.data)
            last = bool(out) and isinstance(out[0], ResponseEnded)
            if last:
                out.popleft()
            message = {"type": "http.response.body", "body": event.data, "more_body": not last}
        elif isinstance(event, ResponseEnded):
            last = True
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        else:
            assert isinstance(event, CloseConnection)
            return False  # cut short (or already complete): the ASGI server closes the connection
        try:
            if last and linger is not None:
                await send({**message, "more_body": True})
                await drain(linger)
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)
        except Exception as exc:  # the client is gone (ASGI servers raise their own kinds)
            log.debug("an ASGI send failed: %r", exc)
            if not exchange.channel.closed:
                await service.feed(exchange.channel, _GONE)
            return False
        if last:
            return True


async def _gather(exchange: Exchange) -> None:
    """Wait for the whole of a streamed answer and give its head the body's length."""
    out = exchange.out
    while not exchange.gone and not _complete(exchange):
        exchange.wake = wake = anyio.Event()
        try:
            await wake.wait()
        finally:
            exchange.wake = None
    head = out[0] if out else None
    if not isinstance(head, ResponseStarted) or head.content_length is not None:
        return
    out.popleft()
    pieces = [e.data for e in out if isinstance(e, ResponseData)]
    ended = not out or isinstance(out[-1], ResponseEnded)
    out.clear()
    body = b"".join(pieces)
    exchange.queued = len(body)
    out.append(ResponseStarted(status=head.status, headers=head.headers,
                               content_length=len(body)))
    out.extend([ResponseData(body)] if body else [])
    out.append(ResponseEnded() if ended else CloseConnection())


def app(
    server: Server, *, request_state_key: bytes | KeyRing | None = None,
    connection_options: Mapping[str, Any] | None = None,
    new_session_id: Callable[[], str] | None = None,
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER, stores: Any = None,
    key_refresh_interval: float = DEFAULT_KEY_REFRESH_INTERVAL, **http_options: Any,
) -> ASGIApp:
    """An ASGI application serving ``server`` over Streamable HTTP (both eras).

    The options are those of every runtime's ``start_http``: ``http_options`` go to
    :class:`~mcp_sansio.http.HTTPServer` (``path``, ``response_mode``, ``allowed_hosts``,
    ``allowed_origins``, limits, ``auth``, ``legacy_sse_path``, ...);
    ``connection_options`` to each session's :class:`~mcp_sansio.ServerConnection`;
    ``request_state_key`` seals stateless-era ``requestState`` (random by default: valid
    for this worker process only -- give every worker the same key so that a
    ``requestState`` sealed by one opens on another).

    ``stores`` makes the application *shared*, as ``start_http(stores=...)`` does our own
    server (:doc:`/stores`): an object with ``sessions``, ``events``, ``bus`` and ``keys``
    (:class:`mcp_sansio.stores.MemoryStores`, :class:`mcp_sansio.adapters.redis.RedisStores`;
    the caller closes it), or a Redis URL (``redis://HOST:PORT/DB``, ``unix:///path``) that
    each worker connects to at its start and closes at shutdown. ``requestState`` is then
    sealed with the store's key ring, re-read every ``key_refresh_interval`` seconds,
    unless ``request_state_key`` is given. Asyncio engines only (module docstring)."""
    late: _LateKeys | None = None
    drawn = False
    if stores is not None:
        http_options.setdefault("shared", True)
        if "stream_tag" not in http_options:
            http_options["stream_tag"], drawn = secrets.token_hex(4), True
        if request_state_key is None:
            # The store's ring is read at the start; until then a throwaway key no
            # request can reach (every request waits for the start).
            late = _LateKeys()
            request_state_key = KeyRing([secrets.token_bytes(32)], source=late)
    http = new_http_server(server, request_state_key=request_state_key,
                           connection_options=connection_options,
                           new_session_id=new_session_id, http_options=http_options)
    application = ASGIApp(http, server=server, max_write_buffer=max_write_buffer,
                          stores=stores, key_refresh_interval=key_refresh_interval)
    application._store_keys = late
    application._tag_pid = os.getpid() if drawn else None
    return application


def http_app(http: HTTPServer, on_event: EventHandler, *,
             max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER) -> ASGIApp:
    """An ASGI application over a bare :class:`~mcp_sansio.http.HTTPServer`: ``on_event``
    gets every ``(session, event)`` pair, as from
    :meth:`~mcp_sansio.http.HTTPServer.next_event`, and answers through
    ``session.connection``; an answer given later (outside ``on_event``) needs
    ``session.flush()`` and :meth:`ASGIApp.wake`."""
    return ASGIApp(http, on_event=on_event, max_write_buffer=max_write_buffer)

