"""The I/O half of the ``mcp-sansio`` command line: ``demo``, ``serve-example`` and ``probe``.

``mcp_sansio/__main__.py`` parses the arguments and calls into this module, which lives with
the adapters because it spawns processes and runs event loops (the core never does).

Manners (docs/cli.rst): an ordinary failure is one line on stderr, ``mcp-sansio COMMAND:
what happened``, and an exit status (1 failed, 2 usage); the traceback is for bugs.

* ``serve-example`` serves through the adapters' ``serve_stdio``/``serve_http`` rather than
  their ``run_*`` wrappers, which swallow Ctrl-C, so the interrupt reaches ``__main__`` (exit
  130; a trio nursery's exception group is unwrapped first). A listener that cannot bind is
  its ``OSError`` in words. Run by hand on a terminal it says on stderr that it waits for a
  client, since nothing else would happen.
* ``probe`` connects with ``connect=False`` and then drives ``connect`` itself under one
  bound (``--timeout`` is for the whole connect, not each step), with the client's
  ``on_step`` hook telling each step and what the server sends that explains a wait (when
  stderr is a terminal, or with ``--verbose``). A failure of HTTP itself is an
  ``HTTPTransportError`` and is said in HTTP terms (:func:`explain_http_failure`).
"""

from __future__ import annotations

import errno
import functools
import importlib
import importlib.util
import ipaddress
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mcp_sansio import HANDSHAKE_REVISIONS, STATELESS_REVISIONS, Era, __version__
from mcp_sansio.app.errors import ConnectionClosedError, McpError, RequestTimeout

from ..common.graceful import serve_until_signal
from . import _example_server

if TYPE_CHECKING:  # the HTTP client is imported only when a URL is probed
    from mcp_sansio.app.http_client import HTTPTransportError

__all__ = ["RUNTIMES", "conformance_client", "demo", "explain_http_failure", "probe",
           "serve_example"]

RUNTIMES = _example_server.RUNTIMES

#: The example server, as this interpreter runs it. ``-P`` keeps the current directory off
#: ``sys.path``: run from a source checkout, ``-m`` would otherwise import the checkout's
#: ``mcp_sansio/`` (which has no ``adapters`` subpackage until installed) instead of the
#: installed package.
EXAMPLE_COMMAND = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]


def _missing_runtime(runtime: str, command: str) -> bool:
    """Say so (and return True) when the runtime's package is not installed."""
    if runtime == "trio" and importlib.util.find_spec("trio") is None:
        sys.stderr.write(f"mcp-sansio {command}: the trio runtime needs trio: "
                         "pip install 'mcp-sansio[trio]'\n")
        return True
    return False


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or name) only accepts connections from this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name (or 0.0.0.0, ::): reachable from elsewhere


def host_allow_list(allow_hosts: Sequence[str]) -> list[str]:
    """The ``Host`` values to accept: the loopback names, plus each ``--allow-host`` (a bare
    name accepts any port, as the loopback defaults do)."""
    from mcp_sansio.http import LOCAL_HOSTS  # lazy: HTTP only: a stdio start does without it

    allowed = list(LOCAL_HOSTS)
    for entry in allow_hosts:
        bare = entry.rsplit("]", 1)[-1] if entry.startswith("[") else entry
        allowed.append(entry if entry == "*" or ":" in bare else f"{entry}:*")
    return allowed


def serve_example(runtime: str, *, transport: str = "stdio", host: str = "127.0.0.1",
                  port: int = 0, allow_hosts: Sequence[str] = (),
                  sessionless: bool = False, store: str | None = None,
                  engine: str | None = None, workers: int = 1, wire: str = "h11",
                  uds: str | None = None) -> int:
    if _missing_runtime(runtime, "serve-example"):
        return 2
    if _bad_wire(wire, transport):
        return 2
    if engine is not None and wire != "h11":
        # An ASGI engine parses HTTP itself (uvicorn with httptools when installed).
        sys.stderr.write("mcp-sansio serve-example: --wire chooses the parser of our own "
                         "server; an --engine brings its own\n")
        return 2
    if sessionless and store is not None:
        # Two answers to "several workers": keep no session, or share them (docs/stores.rst).
        sys.stderr.write("mcp-sansio serve-example: --sessionless keeps no session and --store "
                         "shares sessions between workers; choose one\n")
        return 2
    if (engine is not None or workers != 1) and (
            refused := _engine_refused(runtime, transport, engine, workers)):
        sys.stderr.write(f"mcp-sansio serve-example: {refused}\n")
        return 2
    if workers > 1 and store is None and not sessionless:
        # Several workers and nothing shared -- a handshake-era session opened on
        # one worker would be unknown to the others, so keep none (docs/deploying.rst).
        sessionless = True
        sys.stderr.write(
            f"mcp-sansio serve-example: {workers} workers share no store, so handshake-era "
            "clients are served sessionless (no GET stream, no requests to the client, no "
            "resumption); give --store to keep sessions\n")
    stores = _shared_stores(store, transport) if store is not None else None
    if stores is False:
        return 2
    if store is not None:
        from ..redis import store_unreachable  # lazy: the redis extra

        if (reason := store_unreachable(store)) is not None:  # one line, not a traceback
            sys.stderr.write(f"mcp-sansio serve-example: cannot reach the store at "
                             f"{store}: {reason}\n")
            return 1
    if transport == "http":
        if not is_loopback(host) and not allow_hosts:
            # DNS rebinding (basic/transports.mdx, security warning): a page on any site can
            # make a browser send requests to a name it resolves to this server. The Host
            # check refuses them, so a server reachable from elsewhere must say which names
            # clients use rather than accept any.
            sys.stderr.write(
                f"mcp-sansio serve-example: --host {host} is reachable from other machines; "
                "name the host names clients will use with --allow-host HOST (repeatable; "
                "'*' accepts any, which leaves the server open to DNS rebinding)\n")
            return 2
        if runtime != "asyncio" and not hasattr(_adapter(runtime), "run_http"):
            sys.stderr.write(f"mcp-sansio serve-example: --transport http is not available "
                             f"on {runtime} in this version\n")
            return 2
        # Always named: a server left to choose takes httptools where it is installed, and
        # serve-example's default is h11, the reference the hardening table is written for.
        options: dict[str, Any] = {"wire": wire}
        if allow_hosts:
            options["allowed_hosts"] = host_allow_list(allow_hosts)
        if sessionless:  # handshake era with no session kept (mcp_sansio._sessionless)
            options["sessionless"] = True
        if stores is not None:
            # On an engine each worker connects on its own loop, and a trio or threads
            # server on its store thread (adapters/stores/home.py): the URL goes there;
            # the checked object stays unused.
            options["stores"] = store if engine is not None or runtime != "asyncio" else stores
        try:
            if engine is not None:  # an ASGI engine (adapters/tools/_asgi_serve.py)
                from ._asgi_serve import serve_engine  # lazy: ASGI engines only (optional)

                return serve_engine(engine, runtime, host, port, workers=workers,
                                    options=options, uds=uds)
            if uds is not None:  # a Unix socket (adapters/common/http_options.py)
                options["uds"] = uds
            _serve(runtime, (host, port, options))
        except OSError as exc:  # the port is taken, the address is not this machine's...
            if uds is not None:  # the reason names the path: taken, not a socket...
                sys.stderr.write(f"mcp-sansio serve-example: --uds: {exc}\n")
                return 1
            sys.stderr.write(f"mcp-sansio serve-example: cannot listen on "
                             f"{_host_port(host, port)}: {_os_reason(exc)}\n")
            return 1
        return 0
    if _isatty(sys.stdin):
        # Run by hand: say why nothing happens (stderr: stdout is the protocol's alone).
        sys.stderr.write(
            f"mcp-sansio serve-example: serving MCP on stdio ({runtime}); waiting for a "
            "client on stdin (an MCP client spawns this command; Ctrl-D or Ctrl-C ends "
            "it)\n")
        sys.stderr.flush()
    _serve(runtime, None)
    return 0


def _shared_stores(url: str, transport: str) -> Any:
    """``--store URL``: the Redis stores every worker shares (docs/stores.rst), or False
    after saying on stderr why there are none."""
    problem = None
    if transport != "http":
        problem = "--store needs --transport http"
    if problem is None:
        try:
            from ..redis import RedisStores  # lazy: the redis extra
        except ImportError:
            problem = "--store needs the redis extra: pip install 'mcp-sansio[redis]'"
        else:
            try:
                return RedisStores.from_url(url)
            except ValueError as exc:
                problem = f"--store {url!r} is not a Redis URL ({exc})"
    sys.stderr.write(f"mcp-sansio serve-example: {problem}\n")
    return False


def _engine_refused(runtime: str, transport: str, engine: str | None,
                    workers: int) -> str | None:
    """Why ``--engine``/``--workers`` cannot be honoured (one line), or None."""
    if engine is None:
        return "--workers needs --engine (our own HTTP servers run one process)"
    if transport != "http":
        return "--engine needs --transport http"
    if workers < 1:
        return "--workers must be at least 1"
    from ._asgi_serve import missing  # lazy: ASGI engines only (optional)

    return missing(engine, runtime)


def _bad_wire(wire: str, transport: str) -> bool:
    """Whether ``--wire`` cannot be served (said on stderr): a wire is an HTTP parser, and
    one other than h11 needs its package (the ``fast`` extra)."""
    if wire == "h11":
        return False
    if transport != "http":
        sys.stderr.write("mcp-sansio serve-example: --wire applies to --transport http\n")
        return True
    # Lazy: HTTP only: a stdio start does without it.
    from mcp_sansio.http._wires import wire_factory

    try:
        wire_factory(wire)
    except ImportError as exc:
        sys.stderr.write(f"mcp-sansio serve-example: {exc}\n")
        return True
    return False


def _serve(runtime: str, http: tuple[str, int, dict[str, Any]] | None) -> None:
    """Serve the example server until stdin closes (stdio) or for ever (HTTP). Unlike the
    adapters' ``run_stdio``/``run_http``, which return quietly on Ctrl-C, this lets
    :class:`KeyboardInterrupt` out, so that the command exits with 130."""
    server = _example_server.build(_example_server._sleep_for(runtime))
    _example_server._log_to_stderr()
    adapter = _adapter(runtime)
    if http is None:
        serve: Callable[[], Any] = functools.partial(adapter.serve_stdio, server)
    else:
        host, port, options = http

        def ready(service: Any) -> None:
            sys.stdout.write(f"{service.url}\n")  # the URL, for whoever started us
            sys.stdout.flush()

        # Stopped by SIGTERM (exit 0) or Ctrl-C (130), gracefully (adapters/common/graceful.py).
        try:
            if serve_until_signal(runtime, adapter, server, host, port, on_ready=ready,
                                  **options) == signal.SIGINT:
                raise KeyboardInterrupt
            return
        finally:
            sys.stderr.flush()
    try:
        if runtime == "asyncio":
            import asyncio  # lazy: that runtime only: the others never load asyncio

            asyncio.run(serve())
        elif runtime == "trio":
            importlib.import_module("trio").run(serve)
        else:
            serve()
    except BaseExceptionGroup as group:
        raise _ungroup(group) from None
    finally:
        sys.stderr.flush()


def _ungroup(group: BaseExceptionGroup[Any]) -> BaseException:
    """What a trio nursery's group stands for: a Ctrl-C delivered inside a nursery, or an
    error opening the listener, arrives wrapped; the command reports the one inside."""
    interrupt, _rest = group.split(KeyboardInterrupt)
    if interrupt is not None:
        return KeyboardInterrupt()
    errors = group.exceptions
    if len(errors) == 1:
        inner = errors[0]
        return _ungroup(inner) if isinstance(inner, BaseExceptionGroup) else inner
    return group


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (OSError, ValueError):  # closed or detached
        return False


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _os_reason(exc: BaseException) -> str:
    """An OS error in words (``address already in use``), without Python's decoration."""
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno > 0:
        text = os.strerror(errno)
        return text[:1].lower() + text[1:]
    return str(exc) or type(exc).__name__


# -- conformance-client ------------------------------------------------------------------------


def conformance_client(url: str) -> int:
    """The client of the official conformance harness's client mode (the scenario comes
    from ``MCP_CONFORMANCE_SCENARIO``)."""
    module = importlib.import_module(f"{__package__}._conformance_client")
    return int(module.main(url))


# -- demo --------------------------------------------------------------------------------------


def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


async def _demo(out: TextIO, revision: str) -> int:
    import asyncio  # lazy: that runtime only: the others never load asyncio

    from ..asyncio import connect_stdio  # lazy: the chosen runtime only

    def say(text: str = "") -> None:
        out.write(text + "\n")
        out.flush()

    command = [*EXAMPLE_COMMAND, "--runtime", "asyncio"]
    say(f"# mcp-sansio {__version__} demo: the example server as a subprocess over stdio "
        "(asyncio)")
    say(f"# $ {' '.join(['python', *command[1:]])}")
    async with connect_stdio(command, versions=[revision]) as client:
        say(f"1. handshake: {client.protocol_version} ({client.era.value if client.era else '?'}"
            f" era) with {client.server_info.get('name')} {client.server_info.get('version')}")
        tools = await client.list_tools()
        names = [t["name"] for t in tools]
        say(f"2. tools/list: {len(tools)} tools: {', '.join(names[:5])}, ...")

        say("3. tools/call sleep(seconds=0.5), asking for progress:")

        def progress(value: float, total: float | None, message: str | None) -> None:
            say(f"     progress {value:g}/{total:g}: {message}")

        result = await client.call_tool("sleep", {"seconds": 0.5}, progress=progress,
                                        timeout=10)
        say(f"   -> {result['content'][0]['text']!r}")

        say("4. a cancelled call: sleep(seconds=30), cancelled after 0.3 s")
        call = asyncio.ensure_future(client.call_tool("sleep", {"seconds": 30}))
        await asyncio.sleep(0.3)
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            say("   -> the task was cancelled; notifications/cancelled went to the server, "
                "which cancelled its handler and answers nothing for it")
        pong = await client.ping(timeout=10)
        say(f"   ping afterwards: {pong} (the connection goes on)")
    say(f"   closed: stdin closed, the server exited with status {client.returncode}")

    say(f"5. stateless era ({STATELESS_REVISIONS[-1]}): a new connection; server/discover "
        "instead of initialize")
    async with connect_stdio(command, elicitation=_elicit) as client:
        say(f"   negotiated {client.protocol_version} ({client.era.value if client.era else '?'}"
            " era)")
        result = await client.call_tool("test_input_required_result_elicitation",
                                        timeout=10)
        say("   tools/call test_input_required_result_elicitation -> input_required; "
            "the elicitation callback answered, the call was retried")
        say(f"   -> {result['content'][0]['text']!r}")
    say(f"# done: the server exited with status {client.returncode}")
    return 0


def demo(out: TextIO, revision: str = HANDSHAKE_REVISIONS[-1]) -> int:
    import asyncio  # here: serving on trio or threads should not pay for importing it

    try:
        return asyncio.run(_demo(out, revision))
    except (ConnectionClosedError, McpError, RequestTimeout, OSError) as exc:
        sys.stderr.write(f"mcp-sansio demo: {exc}\n")
        return 1


# -- probe -------------------------------------------------------------------------------------


def _table(out: TextIO, title: str, columns: Sequence[str], rows: list[list[str]]) -> None:
    out.write(f"\n{title} ({len(rows)})\n")
    if not rows:
        out.write("  (none)\n")
        return
    import shutil  # lazy: this path only: a cold start does without it

    width = shutil.get_terminal_size((120, 24)).columns
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    budget = max(20, width - sum(widths[:-1]) - 2 * len(columns) - 2)
    widths[-1] = min(widths[-1], budget)

    def line(cells: Sequence[str]) -> str:
        cut = [c if len(c) <= w else c[:max(w - 1, 0)] + "…" for c, w in zip(cells, widths,
                                                                           strict=True)]
        return "  " + "  ".join(c.ljust(w) for c, w in zip(cut, widths, strict=True)).rstrip()

    out.write(line(columns) + "\n")
    out.write(line(["-" * w for w in widths]) + "\n")
    for row in rows:
        out.write(line(row) + "\n")


def _first_line(text: object) -> str:
    return str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""


async def _probe_lists(client: Any) -> dict[str, list[dict[str, Any]]]:
    caps = client.server_capabilities
    found: dict[str, list[dict[str, Any]]] = {}
    if "tools" in caps:
        found["tools"] = await client.list_tools()
    if "resources" in caps:
        found["resources"] = await client.list_resources()
        found["templates"] = await client.list_resource_templates()
    if "prompts" in caps:
        found["prompts"] = await client.list_prompts()
    return found


def _report(out: TextIO, client: Any, found: dict[str, list[dict[str, Any]]],
            took: float) -> None:
    era = client.era.value if client.era else "?"
    info = client.server_info
    out.write(f"era       {era}\nversion   {client.protocol_version}\n")
    out.write(f"server    {info.get('name')} {info.get('version')}"
              f"{' (' + info['title'] + ')' if info.get('title') else ''}\n")
    out.write(f"connected in {took * 1000:.0f} ms\n")
    if client.instructions:
        out.write(f"instructions  {_first_line(client.instructions)}\n")
    out.write("capabilities  " + json.dumps(client.server_capabilities, sort_keys=True) + "\n")
    if "tools" in found:
        _table(out, "tools", ["name", "description"],
               [[t.get("name", ""), _first_line(t.get("description"))]
                for t in found["tools"]])
    if "resources" in found:
        _table(out, "resources", ["uri", "name", "mimeType"],
               [[r.get("uri", ""), str(r.get("name", "")), str(r.get("mimeType", ""))]
                for r in found["resources"]])
        _table(out, "resource templates", ["uriTemplate", "name"],
               [[r.get("uriTemplate", ""), str(r.get("name", ""))]
                for r in found["templates"]])
    if "prompts" in found:
        _table(out, "prompts", ["name", "arguments", "description"],
               [[p.get("name", ""),
                 ", ".join(a.get("name", "") + ("" if a.get("required") else "?")
                           for a in p.get("arguments") or []),
                 _first_line(p.get("description"))] for p in found["prompts"]])


def _adapter(runtime: str) -> Any:
    """The adapter module of a runtime (imported only when asked for: trio is an extra)."""
    return importlib.import_module(f"mcp_sansio.adapters.{runtime}")


class _ConnectTimeout(Exception):
    """The whole connect (spawn or TCP, probe, initialize) took longer than ``--timeout``."""


async def _connect_within(runtime: str, client: Any, era: Era | None, timeout: float) -> None:
    """``client.connect`` bounded as a whole by ``timeout`` (each request's own idle timeout
    would let a server that answers slowly at every step take several times as long)."""
    if runtime == "trio":
        trio: Any = importlib.import_module("trio")
        with trio.move_on_after(timeout) as scope:
            await client.connect(era=era)
        if scope.cancelled_caught:
            raise _ConnectTimeout
        return
    import asyncio  # lazy: that runtime only: the others never load asyncio

    try:
        await asyncio.wait_for(client.connect(era=era), timeout)
    except TimeoutError:
        raise _ConnectTimeout from None


def _connect_within_sync(client: Any, era: Era | None, timeout: float) -> None:
    """:func:`_connect_within` for the threads runtime (its ``connect`` has no bound)."""
    if not client._connect_within(era, timeout):
        raise _ConnectTimeout
    client._connect_outcome()


async def _probe_async(runtime: str, command: Sequence[str], era: Era | None,
                       timeout: float, note: Callable[[str], None] | None
                       ) -> tuple[Any, dict[str, list[dict[str, Any]]], float]:
    started = time.monotonic()
    async with _adapter(runtime).connect_stdio(list(command), connect=False,
                                               request_timeout=timeout,
                                               shutdown_timeout=1.0) as client:
        client.on_step = note
        await _connect_within(runtime, client, era, timeout)
        took = time.monotonic() - started
        return client, await _probe_lists(client), took


async def _probe_http_async(runtime: str, url: str, era: Era | None, timeout: float,
                            note: Callable[[str], None] | None, auth: Any = None
                            ) -> tuple[Any, dict[str, list[dict[str, Any]]], float]:
    connect = _connect_http(runtime)  # imported first: "connected in" is the network's time
    extra = {"auth": auth} if auth is not None else {}
    while True:
        started = time.monotonic()
        async with connect(url, connect=False, request_timeout=timeout, **extra) as client:
            client.on_step = note
            try:
                await _connect_within(runtime, client, era, timeout)
            except ConnectionClosedError as exc:
                challenge = _login_needed(client, exc)
            else:
                took = time.monotonic() - started
                return client, await _probe_lists(client), took
        # The login is outside --timeout: it waits for a person (the listener's own bound).
        if runtime == "trio":
            trio: Any = importlib.import_module("trio")
            await client.auth.run_async(challenge, trio.to_thread.run_sync,
                                        native_fetch=False)
        else:
            import asyncio  # lazy: that runtime only: the others never load asyncio

            await client.auth.run_async(challenge, asyncio.to_thread, native_fetch=True)


def _login_needed(client: Any, exc: BaseException) -> Any:
    """The challenge to log in with, when ``exc`` is one and the client may; else re-raise."""
    from ..auth.session import challenge_of  # lazy: OAuth only: a stdio start does without it

    challenge = challenge_of(exc) if getattr(client, "auth", None) is not None else None
    if challenge is None:
        raise exc
    return challenge


def _login(store: bool, token_file: str | None, prog: str = "mcp-sansio probe") -> Any:
    """The probe's :class:`~.session.OAuth`: the loopback redirect (RFC 8252 §7.3),
    the URL opened in the browser and printed on stderr, tokens in a file unless not
    stored."""
    import webbrowser  # lazy: this path only: a cold start does without it

    # Lazy: OAuth only: a stdio start does without it.
    from ..auth import FileStorage, LoopbackListener, MemoryStorage, OAuth, default_token_path

    def open_browser(url: str) -> None:
        sys.stderr.write(f"{prog}: the server asks you to log in; open this URL if "
                         f"no browser opens:\n  {url}\n")
        sys.stderr.flush()
        # In a thread: a browser command may wait for the page, which waits for us.
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    storage = (FileStorage(token_file or default_token_path()) if store else MemoryStorage())
    listener = LoopbackListener(open_browser)
    return OAuth(listener, storage=storage)


#: Where ``probe --client-credentials`` reads the client secret when no file is given.
CLIENT_SECRET_ENV = "MCP_SANSIO_CLIENT_SECRET"


def _machine_login(client_id: str, secret_file: str | None, key_file: str | None,
                   store: bool, token_file: str | None) -> Any:
    """The probe's client-credentials grant: the secret from a file or
    :data:`CLIENT_SECRET_ENV`, or a private key from a file (``private_key_jwt``) -- never
    from the command line, where other users of the machine could read it.

    :raises ValueError: no secret or key, or a file that cannot be read.
    """
    from ..auth import (  # lazy: OAuth only: a stdio start does without it
        ClientCredentials,
        ClientCredentialsGrant,
        FileStorage,
        MemoryStorage,
        OAuth,
        default_token_path,
    )

    def read(path: str) -> str:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None

    if key_file is not None:
        credentials = ClientCredentials(client_id, private_key=read(key_file))
    elif secret_file is not None:
        credentials = ClientCredentials(client_id, read(secret_file))
    elif os.environ.get(CLIENT_SECRET_ENV):
        credentials = ClientCredentials(client_id, os.environ[CLIENT_SECRET_ENV])
    else:
        raise ValueError(f"--client-credentials needs --client-secret-file, --client-key-file "
                         f"or {CLIENT_SECRET_ENV} in the environment")
    storage = (FileStorage(token_file or default_token_path()) if store else MemoryStorage())
    return OAuth(grant=ClientCredentialsGrant(credentials), storage=storage)


def _connect_http(runtime: str) -> Any:
    """The runtime's ``connect_http`` (looked up by name: each adapter adds its own)."""
    connect = getattr(_adapter(runtime), "connect_http", None)
    if connect is None:
        raise _Unavailable(f"there is no HTTP client on {runtime} in this version")
    return connect


class _Unavailable(Exception):
    pass


def _transport_line(client: Any) -> str:
    transport = getattr(client, "transport", None)
    name = getattr(transport, "value", None)
    label = {"streamable": "Streamable HTTP", "legacy": "HTTP+SSE (2024-11-05, legacy)"}
    return label.get(str(name), str(name or "?"))


#: What an HTTP status means to someone probing a URL for an MCP endpoint (a server speaks
#: MCP at one path, answering POST: 2025-11-25 basic/transports.mdx, Streamable HTTP).
_HTTP_MEANINGS: dict[int, str] = {
    400: "the server refused the request (bad request)",
    401: "the server wants authorization (basic/authorization.mdx)",
    403: "forbidden (a server that checks Host or Origin refuses this one?)",
    404: "nothing there: not an MCP endpoint (check the path, e.g. /mcp)",
    405: "method not allowed: not an MCP endpoint",
    406: "the server does not accept MCP's content types: not an MCP endpoint",
    415: "the server does not take JSON: not an MCP endpoint",
    501: "not an MCP endpoint",
}


def _is_refused(exc: BaseException | None) -> bool:
    """Whether a socket error (or one it was raised from or groups) is a refused connection."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == \
                errno.ECONNREFUSED:
            return True
        if isinstance(exc, BaseExceptionGroup):
            return any(_is_refused(inner) for inner in exc.exceptions)
        exc = exc.__cause__ or exc.__context__
    return False


def explain_http_failure(exc: HTTPTransportError) -> str:
    """An HTTP transport failure in HTTP terms: ``HTTP 501 from URL: not an MCP endpoint``,
    ``connection refused (URL)``."""
    url = exc.url or "the server"
    if _is_refused(exc.cause):
        return f"connection refused ({url})"
    if exc.cause is not None:
        return f"cannot connect to {url}: {_os_reason(exc.cause)}"
    if exc.status is not None:
        from http import HTTPStatus  # lazy: this path only: a cold start does without it

        meaning = _HTTP_MEANINGS.get(exc.status)
        if meaning is None:
            try:
                phrase = HTTPStatus(exc.status).phrase.lower()
            except ValueError:
                phrase = "an unknown status"
            meaning = f"server error ({phrase})" if exc.status >= 500 else phrase
        # Lazy: HTTP only: a stdio start does without it.
        from mcp_sansio.http._refusal import explain

        said = explain(exc.headers, exc.body).summary()
        return f"HTTP {exc.status} from {url}: {meaning}" + (
            f"; the server said: {said}" if said else "")
    return f"{url}: {exc.detail}"


def probe(out: TextIO, command: Sequence[str], *, runtime: str = "asyncio",
          era: str | None = None, timeout: float = 10.0, verbose: bool = False,
          url: str | None = None, login: bool = True, store: bool = True,
          token_file: str | None = None, client_credentials: str | None = None,
          client_secret_file: str | None = None, client_key_file: str | None = None) -> int:
    """Connect to a stdio server (``command``) or an HTTP one (``url``), print what it
    offers; 0 on success, 1 with a clear message on failure, 2 for a usage error.

    ``timeout`` bounds the whole connect and then each listing request. With ``verbose``,
    or when stderr is a terminal, each step of the connect is told on stderr as it
    happens. Over HTTP, a server that asks for authorization leads to a login through the
    browser (``login``), its tokens kept in ``token_file`` (default: under the user's
    cache directory) unless not ``store``. With ``client_credentials`` (a client id) it
    authorizes as a machine client instead (:func:`_machine_login`)."""
    logging.basicConfig(level=logging.INFO if verbose else logging.CRITICAL,
                        stream=sys.stderr, format="%(name)s: %(message)s")
    if url is not None and command:
        sys.stderr.write("mcp-sansio probe: give either --url URL or -- COMMAND, not both\n")
        return 2
    if url is None and not command:
        sys.stderr.write("mcp-sansio probe: no server given (probe --url URL, or "
                         "probe -- COMMAND ...)\n")
        return 2
    from mcp_sansio.auth import AuthFlowError  # lazy: OAuth only: a stdio start does without it

    cached = Era(era) if era else None
    if _missing_runtime(runtime, "probe"):
        return 2
    # One line however the command was written (a script given with -c has newlines).
    target = url if url is not None else " ".join(command).replace("\n", "\\n")
    steps: list[str] = []

    def note(text: str) -> None:
        if text.startswith("trying"):
            steps.append(text)  # a step of the connect (not a remark about the server)
        if verbose or _isatty(sys.stderr):
            sys.stderr.write(f"mcp-sansio probe: {text}...\n" if text.startswith("trying")
                             else f"mcp-sansio probe: {text}\n")
            sys.stderr.flush()

    try:
        if url is not None:
            note(f"connecting to {url}")
            if client_credentials is not None:
                auth = _machine_login(client_credentials, client_secret_file,
                                      client_key_file, store, token_file)
            else:
                auth = _login(store, token_file) if login else None
            client, found, took = _run_probe_http(runtime, url, cached, timeout, note, auth)
        else:
            note(f"starting {target}")
            if runtime == "asyncio":
                import asyncio  # lazy: that runtime only: the others never load asyncio

                client, found, took = asyncio.run(
                    _probe_async(runtime, command, cached, timeout, note))
            elif runtime == "trio":
                trio: Any = importlib.import_module("trio")
                client, found, took = trio.run(_probe_async, runtime, command, cached,
                                               timeout, note)
            else:
                client, found, took = _probe_threads(command, cached, timeout, note)
    except _Unavailable as exc:
        sys.stderr.write(f"mcp-sansio probe: {exc}\n")
        return 2
    except ValueError as exc:  # not an http(s) URL
        sys.stderr.write(f"mcp-sansio probe: {exc}\n")
        return 2
    except FileNotFoundError as exc:
        sys.stderr.write(f"mcp-sansio probe: cannot run {command[0]!r}: {exc.strerror}\n")
        return 1
    except _ConnectTimeout:
        doing = f"; last step: {steps[-1]}" if steps else ""
        sys.stderr.write(f"mcp-sansio probe: {target}: no connection within {timeout:g} s"
                         f"{doing}\n")
        return 1
    except AuthFlowError as exc:  # the login failed: the step and the URL say where
        sys.stderr.write(f"mcp-sansio probe: {target}: login failed: {exc}\n")
        return 1
    except (ConnectionClosedError, McpError, RequestTimeout, OSError) as exc:
        if url is not None:
            # Lazy: HTTP only: a stdio start does without it.
            from mcp_sansio.app.http_client import HTTPTransportError

            if isinstance(exc, HTTPTransportError):
                sys.stderr.write(f"mcp-sansio probe: {explain_http_failure(exc)}\n")
                return 1
        sys.stderr.write(f"mcp-sansio probe: {target}: {exc}\n")
        return 1
    if url is not None:
        out.write(f"transport {_transport_line(client)}\n")
    _report(out, client, found, took)
    return 0


def _run_probe_http(runtime: str, url: str, era: Era | None, timeout: float,
                    note: Callable[[str], None], auth: Any = None
                    ) -> tuple[Any, dict[str, list[dict[str, Any]]], float]:
    if runtime == "asyncio":
        import asyncio  # lazy: that runtime only: the others never load asyncio

        return asyncio.run(_probe_http_async(runtime, url, era, timeout, note, auth))
    if runtime == "trio":
        trio: Any = importlib.import_module("trio")
        return trio.run(  # type: ignore[no-any-return]
            _probe_http_async, runtime, url, era, timeout, note, auth)
    connect = _connect_http(runtime)
    extra = {"auth": auth} if auth is not None else {}
    while True:
        started = time.monotonic()
        with connect(url, connect=False, request_timeout=timeout, **extra) as client:
            client.on_step = note
            try:
                _connect_within_sync(client, era, timeout)
            except ConnectionClosedError as exc:
                challenge = _login_needed(client, exc)
            else:
                took = time.monotonic() - started
                return client, _probe_lists_sync(client), took
        client.auth.run_sync(challenge)


def _probe_lists_sync(client: Any) -> dict[str, list[dict[str, Any]]]:
    caps = client.server_capabilities
    found: dict[str, list[dict[str, Any]]] = {}
    if "tools" in caps:
        found["tools"] = client.list_tools()
    if "resources" in caps:
        found["resources"] = client.list_resources()
        found["templates"] = client.list_resource_templates()
    if "prompts" in caps:
        found["prompts"] = client.list_prompts()
    return found


def _probe_threads(command: Sequence[str], era: Era | None, timeout: float,
                   note: Callable[[str], None]
                   ) -> tuple[Any, dict[str, list[dict[str, Any]]], float]:
    started = time.monotonic()
    with _adapter("threading").connect_stdio(list(command), connect=False,
                                             request_timeout=timeout,
                                             shutdown_timeout=1.0) as client:
        client.on_step = note
        _connect_within_sync(client, era, timeout)
        took = time.monotonic() - started
        return client, _probe_lists_sync(client), took
