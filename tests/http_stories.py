"""What the runtime HTTP tests (tests/adapters/asyncio/test_http_asyncio.py, test_http_trio.py,
test_http_threading.py, test_http_client_asyncio.py, test_http_interop.py and the
cross-runtime test_http_server_runtimes.py and test_http_client_runtimes.py) share: a raw
keep-alive HTTP/1.1 client on h11 (its sans-IO part, then an async one over any byte stream
and a blocking one over a socket), stateless-era request bodies, the client callbacks and the
runtime-free tools of the test servers, servers in a subprocess or in a thread (asyncio,
trio), a self-signed certificate and a TLS-terminating relay in front of a plain HTTP
server, and a check that no test leaves a thread behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import selectors
import socket
import ssl
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any

import h11
import pytest

from mcp_sansio import Era
from mcp_sansio.http import SSEParser
from tests.http_util import stateless_meta

ACCEPT = "application/json, text/event-stream"
#: ``era`` for ``connect_http`` by test parameter (None: the probe finds stateless).
ERAS = {"handshake": Era.HANDSHAKE, "stateless": None}
#: A guard against a hang only (never a measurement): far above what any step here takes.
GUARD = 30.0


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Every thread a test's service started is gone when the service is closed."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + GUARD
    while True:
        left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not left, left


# -- a raw HTTP/1.1 client -------------------------------------------------------------------------


def messages_of(headers: dict[str, str], raw: bytes) -> list[Any]:
    """The JSON-RPC messages a whole answer carried (SSE events with data, or a JSON body)."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(e.data) for e in SSEParser().feed(raw) if e.data]
    return [json.loads(raw)] if raw else []


def sse_messages(parser: SSEParser, data: bytes) -> list[Any]:
    """The JSON-RPC messages in one chunk of an SSE body, as ``parser`` completes them."""
    return [json.loads(e.data) for e in parser.feed(data) if e.data]


class H11Client:
    """The sans-IO part of a keep-alive HTTP/1.1 test client: the bytes of a request, and the
    status and headers of an answer's head. The runtime's subclass moves the bytes."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.h11 = h11.Connection(h11.CLIENT)

    def encode(self, method: str, body: Any = None, headers: dict[str, str] | None = None,
               path: str = "/mcp", accept: str | None = None) -> bytes:
        """One whole request: a JSON ``body`` (if any), ``Accept`` as the spec asks of the
        method (an SSE stream for GET, either for POST) unless ``accept`` says otherwise."""
        data = b"" if body is None else json.dumps(body).encode()
        if accept is None:
            accept = "text/event-stream" if method == "GET" else ACCEPT
        hdrs = [("host", self.host), ("accept", accept), ("content-length", str(len(data)))]
        if body is not None:
            hdrs.append(("content-type", "application/json"))
        hdrs += list((headers or {}).items())
        out = self.h11.send(h11.Request(method=method, target=path, headers=hdrs)) or b""
        if data:
            out += self.h11.send(h11.Data(data=data)) or b""
        out += self.h11.send(h11.EndOfMessage()) or b""
        return out

    @staticmethod
    def head_of(event: Any) -> tuple[int, dict[str, str]]:
        assert isinstance(event, h11.Response), event
        return event.status_code, {k.decode(): v.decode() for k, v in event.headers}

    def finish(self, headers: dict[str, str], raw: bytes) -> list[Any]:
        """The answer was read to its end: ready for the next request; its messages."""
        self.h11.start_next_cycle()
        return messages_of(headers, raw)


class AsyncConn(H11Client):
    """A keep-alive HTTP/1.1 client connection over any async byte stream (``receive`` reads
    up to 64 KiB, ``send_all`` writes all, ``aclose`` closes)."""

    def __init__(self, host: str, receive: Callable[[int], Awaitable[bytes]],
                 send_all: Callable[[bytes], Awaitable[None]],
                 aclose: Callable[[], Awaitable[None]]) -> None:
        super().__init__(host)
        self._receive, self._send_all, self._aclose = receive, send_all, aclose

    async def next(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self._receive(65536))

    async def send(self, method: str, body: Any = None, headers: dict[str, str] | None = None,
                   path: str = "/mcp", accept: str | None = None) -> None:
        await self._send_all(self.encode(method, body, headers, path, accept))

    async def head(self) -> tuple[int, dict[str, str]]:
        return self.head_of(await self.next())

    async def request(self, method: str, body: Any = None,
                      headers: dict[str, str] | None = None
                      ) -> tuple[int, dict[str, str], list[Any]]:
        """Send, read the whole answer; the JSON-RPC messages it carried."""
        await self.send(method, body, headers)
        status, got = await self.head()
        raw = b""
        while not isinstance(event := await self.next(), h11.EndOfMessage):
            raw += event.data
        return status, got, self.finish(got, raw)

    async def close(self) -> None:
        await self._aclose()


class Stream:
    """The SSE messages of one streaming response on an :class:`AsyncConn`, read as they
    come (after its head)."""

    def __init__(self, conn: AsyncConn) -> None:
        self.conn = conn
        self.parser = SSEParser()
        self.queue: list[Any] = []

    async def message(self) -> Any:
        while not self.queue:
            event = await self.conn.next()
            assert isinstance(event, h11.Data), event
            self.queue += sse_messages(self.parser, event.data)
        return self.queue.pop(0)


class SyncConn(H11Client):
    """A blocking keep-alive HTTP/1.1 client connection on a socket."""

    def __init__(self, port: int, sock: socket.socket | None = None) -> None:
        super().__init__(f"127.0.0.1:{port}")
        self.sock = sock or socket.create_connection(("127.0.0.1", port), timeout=GUARD)

    def next(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(self.sock.recv(65536))

    def send(self, method: str, body: Any = None, headers: dict[str, str] | None = None,
             path: str = "/mcp", accept: str | None = None) -> None:
        self.sock.sendall(self.encode(method, body, headers, path, accept))

    def head(self) -> tuple[int, dict[str, str]]:
        return self.head_of(self.next())

    def request(self, method: str, body: Any = None, headers: dict[str, str] | None = None
                ) -> tuple[int, dict[str, str], list[Any]]:
        """Send, read the whole answer; the JSON-RPC messages it carried."""
        self.send(method, body, headers)
        status, got = self.head()
        raw = b""
        while not isinstance(event := self.next(), h11.EndOfMessage):
            raw += event.data
        return status, got, self.finish(got, raw)

    def stream(self) -> Iterator[Any]:
        """The messages of an SSE response as they come (after :meth:`head`)."""
        parser = SSEParser()
        while True:
            event = self.next()
            if isinstance(event, h11.EndOfMessage):
                return
            assert isinstance(event, h11.Data), event
            yield from sse_messages(parser, event.data)

    def close(self) -> None:
        self.sock.close()


# -- requests and the client's side of the stories -------------------------------------------------


def stateless(method: str, params: dict[str, Any], request_id: int = 1,
              name: str | None = None, **meta: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """A stateless-era (2026-07-28) request: its body and the headers it needs."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**params, "_meta": stateless_meta(**meta)}}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return body, headers


def tool_call(name: str, arguments: dict[str, Any], request_id: int = 1,
              **meta: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """A stateless-era ``tools/call`` (with its ``Mcp-Name`` header)."""
    return stateless("tools/call", {"name": name, "arguments": arguments}, request_id, name,
                     **meta)


def elicit(params: dict[str, Any]) -> dict[str, Any]:
    """The client's answer to the test servers' ``ask_name`` tool."""
    assert params["message"] == "Your name?"
    return {"action": "accept", "content": {"name": "Ada"}}


#: The client's answer to the test servers' ``haiku`` tool (sampling).
HAIKU = {"role": "assistant", "model": "test",
         "content": {"type": "text", "text": "old pond, frog"}}


# -- the test servers' tools ---------------------------------------------------------------------
# ``async def`` tools that use no runtime of their own: the same on asyncio, trio and the
# threads' event loops. (No docstrings: a tool's description is then its name.)


async def _echo(text: str, ctx: Any) -> str:
    ctx.log("info", f"echo {text}")
    return text


async def _change(ctx: Any) -> str:
    ctx.notify_list_changed("tools")
    return "changed"


async def _ask_name(ctx: Any) -> str:
    answer = await ctx.elicit("Your name?", {"type": "object",
                                             "properties": {"name": {"type": "string"}}})
    return f"hello {answer['content']['name']}"


async def _haiku(ctx: Any) -> str:
    result = await ctx.sample({"messages": [{"role": "user", "content": {
        "type": "text", "text": "a haiku"}}], "maxTokens": 50})
    return str(result["content"]["text"])


_TOOLS = {"echo": _echo, "change": _change, "ask_name": _ask_name, "haiku": _haiku}


def add_tools(server: Any, *names: str) -> None:
    """Give ``server`` the named tools: ``echo`` (logs ``echo <text>`` at info, answers
    ``text``), ``change`` (a tools list change), ``ask_name`` (elicits a name, answers
    ``hello <name>``: :func:`elicit`), ``haiku`` (samples: :data:`HAIKU`)."""
    for name in names:
        server.add_tool(_TOOLS[name], name=name)


def block_tool(probe: Any, runtime: str = "asyncio") -> Callable[[], Coroutine[Any, Any, str]]:
    """A ``block`` tool for asyncio (also the threads' event loops) or trio: sets
    ``probe.started``, waits until cancelled, then sets ``probe.cancelled`` (events with a
    ``set`` method: the runtime's or threading's)."""
    forever: Callable[[], Awaitable[Any]]
    if runtime == "trio":
        import trio
        forever, cancellation = trio.sleep_forever, trio.Cancelled
    else:
        forever, cancellation = (lambda: asyncio.Event().wait()), asyncio.CancelledError

    async def block() -> str:
        probe.started.set()
        try:
            await forever()
        except cancellation:
            probe.cancelled.set()
            raise
        return "never"

    return block


# -- servers in a process or a thread -------------------------------------------------------------


@contextlib.contextmanager
def url_process(argv: list[str], prefix: str = "http://127.0.0.1:", *, kill: bool = False,
                grace: float = 10.0, quiet: bool = True) -> Iterator[str]:
    """A server in a subprocess that prints its URL first (checked to start with
    ``prefix``): the URL while the block runs. Then it is terminated (killed if it is not
    gone within ``grace`` seconds), or killed at once with ``kill`` (a peer with nothing to
    save). ``quiet``: its stderr is dropped."""
    import subprocess

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.DEVNULL if quiet else None)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith(prefix), url
        yield url
    finally:
        if kill:
            proc.kill()
        else:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def serve_example(*args: str, runtime: str = "asyncio") -> list[str]:
    """The command line of ``mcp-sansio serve-example --transport http`` on ``runtime``."""
    return [sys.executable, "-m", "mcp_sansio", "serve-example", "--transport", "http",
            "--runtime", runtime, *args]


@contextlib.contextmanager
def asyncio_service(server: Any, **options: Any) -> Iterator[str]:
    """The asyncio HTTP server adapter serving ``server``, on its own loop in a thread;
    yields its URL."""
    from mcp_sansio.adapters import asyncio as aio

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        box["stop"] = asyncio.Event()
        async with aio.start_http(server, **options) as service:
            box["url"] = service.url
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),))
    thread.start()
    try:
        assert ready.wait(GUARD)
        yield box["url"]
    finally:
        loop.call_soon_threadsafe(box["stop"].set)
        thread.join(GUARD)
        loop.close()


@contextlib.contextmanager
def trio_service(server: Any, **options: Any) -> Iterator[str]:
    """The trio HTTP server adapter serving ``server``, in ``trio.run`` in a thread;
    yields its URL."""
    import trio
    from mcp_sansio.adapters import trio as trio_adapter

    ready = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        with trio.CancelScope() as scope:
            box["stop"] = scope.cancel
            box["token"] = trio.lowlevel.current_trio_token()
            async with trio_adapter.start_http(server, **options) as service:
                box["url"] = service.url
                ready.set()
                await trio.sleep_forever()

    thread = threading.Thread(target=trio.run, args=(main,))
    thread.start()
    try:
        assert ready.wait(GUARD)
        yield box["url"]
    finally:
        if "token" in box:
            trio.from_thread.run_sync(box["stop"], trio_token=box["token"])
        thread.join(GUARD)


# -- TLS -------------------------------------------------------------------------------------------


def self_signed(tmp: Any) -> tuple[str, str]:
    """A certificate for ``localhost`` and 127.0.0.1 and its key, as PEM files
    (cryptography comes with the official SDK in the test extra)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


@contextlib.contextmanager
def tls_front(port: int, cert: str, key: str) -> Iterator[int]:
    """A TLS-terminating relay to 127.0.0.1:``port`` (one thread per connection, each the
    only user of its TLS socket); yields its own port. Leaving the block shuts every
    accepted connection down (a client that gave up mid-handshake may not have closed its
    end yet), so that no relay outlives it."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    relays: list[threading.Thread] = []
    accepted: list[socket.socket] = []  # a duplicate of each (wrap_socket takes the original)

    def relay(raw: socket.socket) -> None:
        try:
            with context.wrap_socket(raw, server_side=True) as tls, \
                    socket.create_connection(("127.0.0.1", port)) as plain:
                selector = selectors.DefaultSelector()
                selector.register(tls, selectors.EVENT_READ)
                selector.register(plain, selectors.EVENT_READ)
                while True:
                    for key_, _ in selector.select():
                        if key_.fileobj is tls:
                            data = tls.recv(65536)
                            if not data:
                                return
                            plain.sendall(data)
                            while tls.pending():
                                plain.sendall(tls.recv(65536))
                        else:
                            data = plain.recv(65536)
                            if not data:
                                return
                            tls.sendall(data)
        except (OSError, ssl.SSLError):
            return

    def accept() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            accepted.append(raw.dup())
            thread = threading.Thread(target=relay, args=(raw,))
            relays.append(thread)
            thread.start()

    acceptor = threading.Thread(target=accept)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join(GUARD)
        for sock in accepted:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in relays:
            thread.join(GUARD)
