"""``mcp-sansio serve-example --engine ENGINE [--workers N]``: the example server's ASGI
application on uvicorn, hypercorn or granian.

Theory of operation
-------------------
An engine with several workers imports the application in each worker process (spawned, not
forked, by hypercorn; forked or spawned by the others), so the application is named by an
import string -- :func:`example_app`, a factory -- and what the command line chose reaches
the workers through the environment, set by the parent before the engine starts:
:data:`OPTIONS_ENV` (the HTTP server's options, JSON) and the ``requestState`` key ring
(:func:`mcp_sansio.adapters.keys.worker_environment`: the configured ring, inherited, or one
key drawn by the parent for all its workers; docs/keys.rst), so a ``requestState`` sealed by
one worker opens on every other (what a 2026-07-28 client needs when its requests land on
different workers). With ``--store URL`` the options carry the URL instead, and each worker
connects to it on its own loop, draws its own stream tag and takes the key ring from the
store (shared mode: ``adapters/asgi.py``), so no key is drawn here.

The URL is printed on stdout, as on our own servers, once the port accepts connections (the
parent polls it: with several workers no single one knows it is the first). Port 0 is
resolved first by binding a socket to it and reading the port back (the engines bind by
number; a port taken in between fails the start, loudly). ``--runtime trio`` selects
hypercorn's trio worker; uvicorn and granian run asyncio only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..common.http_options import UDS_MODE, claim_socket_path

__all__ = ["ENGINES", "ENGINE_OPTIONS", "OPTIONS_ENV", "UDS_MODE", "UDS_URL",
           "claim_socket_path", "example_app", "missing", "serve_engine"]

#: The engines, each with the extra that installs it.
ENGINES = {"uvicorn": "uvicorn", "hypercorn": "hypercorn", "granian": "granian"}
#: The HTTP server's options for every worker (JSON), set by :func:`serve_engine`.
OPTIONS_ENV = "MCP_SANSIO_EXAMPLE_HTTP_OPTIONS"
#: Seconds the parent waits for the engine to accept connections before giving up on
#: printing the URL: 60 s (a cold start of several spawned workers on a loaded machine
#: takes seconds; beyond a minute something is wrong and the engine's own log says what).
READY_TIMEOUT = 60.0
_APP = "mcp_sansio.adapters.tools._asgi_serve:example_app"
#: The URL printed for a server on a Unix socket: the path and the Host a client sends.
UDS_URL = "http://localhost/mcp"
#: The largest request head our own servers accept (mcp_sansio.http's default).
_HEAD = 16 * 1024

#: What each engine is given to close the hardening gaps only it can close -- the rows of
#: the engine table in docs/deploying.rst ("Hardening, engine by engine"), where the same
#: options are shown for a launch command of one's own: engine -> option -> value.
ENGINE_OPTIONS: dict[str, dict[str, Any]] = {
    "uvicorn": {
        # h11 rather than httptools: it keeps an absolute-form target's authority (checked
        # against the allowed hosts), hands over any method token (405 with Allow), and
        # bounds a chunk line and a trailer section with the limit below.
        "http": "h11",
        "h11_max_incomplete_event_size": _HEAD,  # a head, a chunk line, a trailer section
        "timeout_keep_alive": 5,  # seconds an idle keep-alive connection is kept
    },
    "hypercorn": {
        "h11_max_incomplete_size": _HEAD,
        "keep_alive_timeout": 5,
        "read_timeout": 60,  # seconds without a byte from a client before it is dropped
    },
    "granian": {
        # hyper bounds a head by its read buffer; a head that fills it gets 431
        "http1_max_buffer_size": 64 * 1024,
        "http1_header_read_timeout": 30_000,  # milliseconds for a whole head (slow heads)
        "backpressure": 1024,  # requests a worker runs at once
    },
}


def example_app() -> Any:
    """The example server as an ASGI application, configured from the environment (the
    factory every worker calls)."""
    import anyio

    from .. import asgi
    from . import _example_server

    _example_server._log_to_stderr()
    server = _example_server.build(anyio.sleep)  # asyncio or trio, whichever runs it
    options: dict[str, Any] = json.loads(os.environ.get(OPTIONS_ENV) or "{}")
    # The key ring comes from the environment the parent prepared (adapters/keys.py).
    return asgi.app(server, **options)


def missing(engine: str, runtime: str) -> str | None:
    """Why ``engine`` cannot serve on ``runtime`` here (one line), or None."""
    if engine not in ENGINES:
        return f"unknown engine {engine!r} (one of {', '.join(ENGINES)})"
    if runtime == "trio" and engine != "hypercorn":
        return f"--runtime trio runs on hypercorn's trio worker only, not on {engine}"
    if runtime not in ("asyncio", "trio"):
        return f"--engine {engine} serves with asyncio or trio, not {runtime}"
    needed = [engine, "anyio", "sniffio"] + (["trio"] if runtime == "trio" else [])
    absent = [name for name in needed if importlib.util.find_spec(name) is None]
    if absent:
        extra = ENGINES[engine] + (",trio" if runtime == "trio" else "")
        return (f"--engine {engine} needs {', '.join(absent)}: "
                f"pip install 'mcp-sansio[{extra}]'")
    return None


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _announce(host: str, port: int, url: str) -> None:
    """Print ``url`` once ``host:port`` accepts connections (a thread of the parent)."""
    deadline = time.monotonic() + READY_TIMEOUT
    target = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((target, port), timeout=1.0):
                break
        except OSError:
            time.sleep(0.05)
    else:
        return
    sys.stdout.write(f"{url}\n")
    sys.stdout.flush()


def _no_delay(sock: socket.socket) -> socket.socket:
    """``sock`` (a listening TCP socket) with Nagle's algorithm off for what it accepts.

    uvicorn's workers share a socket it binds with protocol 0, and asyncio turns
    ``TCP_NODELAY`` on only for sockets made with ``IPPROTO_TCP``; an answer written in two
    pieces then waits for the client's delayed ACK (~40 ms a request; benchmarks/README.md).
    Linux hands the listening socket's ``TCP_NODELAY`` to every connection it accepts."""
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _announce_uds(path: str, url: str) -> None:
    """Print ``url`` once the socket at ``path`` accepts connections."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            break
        except OSError:
            time.sleep(0.05)
        finally:
            probe.close()
    else:
        return
    sys.stdout.write(f"{url}\n")
    sys.stdout.flush()


def serve_engine(engine: str, runtime: str, host: str, port: int, *, workers: int,
                 options: dict[str, Any], uds: str | None = None) -> int:
    """Run the example server's ASGI application on ``engine`` until it is stopped (on the
    Unix socket ``uds`` instead of ``host:port`` when given); the exit status."""
    if uds is not None:
        refused = claim_socket_path(uds)
        if refused is not None:
            sys.stderr.write(f"mcp-sansio serve-example: --uds: {refused}\n")
            return 1
    elif port == 0:
        port = _free_port(host)
    os.environ[OPTIONS_ENV] = json.dumps(options)
    if "stores" not in options:
        from ..keys import worker_environment

        os.environ.update(worker_environment(workers))
    shown = f"[{host}]" if ":" in host else host
    if uds is not None:  # the URL names the path and the Host; the socket, the connection
        threading.Thread(target=_announce_uds, args=(uds, UDS_URL), daemon=True).start()
    else:
        threading.Thread(target=_announce, args=(host, port, f"http://{shown}:{port}/mcp"),
                         daemon=True).start()
    level = "warning"
    tuned = ENGINE_OPTIONS[engine]
    if engine == "uvicorn":
        import uvicorn

        if uds is not None:
            from uvicorn.supervisors import Multiprocess

            shared = uvicorn.Config(_APP, factory=True, uds=uds, workers=workers,
                                    log_level=level, lifespan="on", **tuned)
            sock = shared.bind_socket()
            os.chmod(uds, UDS_MODE)  # (uvicorn makes it 0666)
            Multiprocess(shared, sockets=[sock]).run()
        elif workers == 1:
            # uvicorn raises the signal it stopped on again once its graceful stop is done,
            # for the handler in place before it: this one ends the process with status 0
            # (as it does for a SIGTERM before uvicorn's own handler is in place), so that a
            # stop asked for by SIGTERM exits 0 (docs/cli.rst), as on the other engines.
            signal.signal(signal.SIGTERM, _stopped)
            uvicorn.run(_APP, factory=True, host=host, port=port, log_level=level,
                        lifespan="on", **tuned)
        else:
            from uvicorn.supervisors import Multiprocess

            shared = uvicorn.Config(_APP, factory=True, host=host, port=port,
                                    workers=workers, log_level=level, lifespan="on", **tuned)
            Multiprocess(shared, sockets=[_no_delay(shared.bind_socket())]).run()
    elif engine == "hypercorn":
        from hypercorn.config import Config
        from hypercorn.run import run

        config = Config()
        config.application_path = _APP + "()"  # hypercorn evaluates the name: a call
        config.bind = [f"unix:{uds}"] if uds is not None else [f"{shown}:{port}"]
        if uds is not None:
            os.umask(0o777 & ~UDS_MODE)  # the socket file is made with this process's umask
        config.worker_class = runtime
        # Worker processes even for one: hypercorn's parent turns SIGINT and SIGTERM into a
        # graceful stop; served in this process (workers = 0) its workers stop on Ctrl-C
        # only (KeyboardInterrupt), not on SIGTERM, which is what supervisors send.
        config.workers = workers
        config.loglevel = level.upper()
        for name, value in tuned.items():
            setattr(config, name, value)
        # Its status: non-zero when a worker crashed, so that a supervisor sees it (a
        # graceful stop on SIGTERM is 0).
        return int(run(config))
    else:
        from granian import Granian
        from granian.constants import Interfaces
        from granian.http import HTTP1Settings
        from granian.log import LogLevels

        # A worker that dies is started again, as uvicorn does (granian's default, like
        # hypercorn's only behaviour, is to stop the whole server): with shared stores the
        # other workers carry its sessions meanwhile, and the service keeps its full size.
        http1 = HTTP1Settings(header_read_timeout=tuned["http1_header_read_timeout"],
                              max_buffer_size=tuned["http1_max_buffer_size"])
        where: dict[str, Any] = ({"uds": Path(uds), "uds_permissions": UDS_MODE}
                                 if uds is not None else {"address": host, "port": port})
        Granian(_APP, factory=True, interface=Interfaces.ASGI,
                workers=workers, log_level=LogLevels.warning,
                respawn_failed_workers=True, http1_settings=http1,
                backpressure=tuned["backpressure"], **where).serve()
    return 0


def _stopped(signum: int, frame: Any) -> None:
    """SIGTERM outside uvicorn's own handling (before it starts, or raised again once it
    has stopped gracefully): the stop asked for, with status 0."""
    raise SystemExit(0)
