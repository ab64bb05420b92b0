"""Where a server's ``requestState`` key ring comes from: configuration, a store, or (one
process only) a key drawn at start.

Theory of operation
-------------------
A sealed 2026-07-28 ``requestState`` comes back on whatever worker or host the client's retry
reaches, so every process of one service must hold the same :class:`~mcp_sansio.KeyRing`
(the core's; this module only finds its keys). :func:`request_state_keys`, called once when
a server starts, decides in this order:

1. a key or ring the code passed (``request_state_key=``) is used as given;
2. else the environment: :data:`ENV_KEYS` holds the ring itself, :data:`ENV_KEYS_FILE`
   names a file holding it (re-read when it changes, so a rotation needs no restart:
   :class:`FileKeySource`). The format is :meth:`KeyRing.parse <mcp_sansio.KeyRing.parse>`'s:
   base64 keys of at least 32 bytes, the sealing key first;
3. else a random key for this process alone -- today's behaviour, right for a single
   process, where no other can be asked to open what it sealed. A server that says it is
   shared (more than one worker, or a store other processes read) logs one warning line
   saying that states will not open elsewhere, and one with :data:`ENV_KEYS_REQUIRED` set
   refuses to start instead.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence

from mcp_sansio import KeyRing

from .stores.keys import DEFAULT_KEY_REFRESH_INTERVAL, StoreKeys, rotate_key, store_key_ring

__all__ = ["DEFAULT_KEY_REFRESH_INTERVAL", "ENV_KEYS", "ENV_KEYS_FILE", "ENV_KEYS_REQUIRED",
           "FileKeySource", "KeyConfigurationError", "StoreKeys", "configured_key_ring",
           "request_state_keys", "rotate_key", "shares_state", "store_key_ring",
           "worker_environment"]

log = logging.getLogger("mcp_sansio.adapters.keys")

#: The key ring itself (keys separated by spaces, commas or newlines).
ENV_KEYS = "MCP_SANSIO_STATE_KEYS"
#: The path of a file holding the key ring (one key a line; ``#`` comments).
ENV_KEYS_FILE = "MCP_SANSIO_STATE_KEYS_FILE"
#: Set (to anything but empty or ``0``) where a per-process key would be a mistake -- any
#: deployment of more than one worker or host: a server without configured keys then
#: refuses to start.
ENV_KEYS_REQUIRED = "MCP_SANSIO_STATE_KEYS_REQUIRED"

#: How often, at most, a :class:`FileKeySource` looks at its file, in seconds. A rotation
#: waits between its steps for every host to have the new ring anyway (minutes, not
#: seconds), and a look costs one ``stat`` on the path of every seal and open, so once a
#: second is both prompt and free.
DEFAULT_CHECK_EVERY = 1.0


class KeyConfigurationError(ValueError):
    """The key ring's configuration is missing where it is required, or unusable."""


class FileKeySource:
    """A :class:`~mcp_sansio.KeySource` that reads a key file and reads it again when it
    changes (its modification time or size), at most every ``check_every`` seconds. A file
    that becomes unreadable or malformed keeps the last good keys, with one error logged
    per change: a typo during a rotation must not stop the server from opening states."""

    def __init__(self, path: str | os.PathLike[str], *,
                 check_every: float = DEFAULT_CHECK_EVERY) -> None:
        from pathlib import Path  # here: a server without a key file never pays for pathlib

        self.path = Path(path)
        self.check_every = check_every
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._checked = time.monotonic()
        self._keys: tuple[bytes, ...] = ()
        self._keys = self._read(strict=True)

    def keys(self) -> Sequence[bytes]:
        now = time.monotonic()
        if now - self._checked >= self.check_every and self._lock.acquire(blocking=False):
            try:
                self._checked = now
                self._keys = self._read(strict=False)
            finally:
                self._lock.release()
        return self._keys

    def _read(self, *, strict: bool) -> tuple[bytes, ...]:
        try:
            info = self.path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
            if stamp == self._stamp:
                return self._keys
            self._stamp = stamp
            ring = KeyRing.parse(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            if strict:
                raise KeyConfigurationError(
                    f"requestState keys: cannot use {ENV_KEYS_FILE} file {self.path}: "
                    f"{exc}") from None
            log.error("requestState keys: %s changed and cannot be used (%s); keeping the "
                      "previous keys", self.path, exc)
            return self._keys
        keys = ring.keys()
        if self._keys and keys != self._keys:
            log.info("requestState keys: reloaded %s: %s (the first seals)",
                     self.path, " ".join(ring.ids))
        return keys


def shares_state(http_options: Mapping[str, object]) -> bool:
    """Whether an HTTP server with these options shares what it writes with other
    processes: its event store is not the in-memory one (a store is only worth giving when
    others read it)."""
    from mcp_sansio.http import InMemoryEventStore  # lazy: HTTP only: a stdio start does without it

    store = http_options.get("event_store")
    return store is not None and not isinstance(store, InMemoryEventStore)


def configured_key_ring(environ: Mapping[str, str] | None = None) -> KeyRing | None:
    """The key ring the environment configures (:data:`ENV_KEYS` or :data:`ENV_KEYS_FILE`),
    or None; :class:`KeyConfigurationError` when what it says is unusable."""
    env = os.environ if environ is None else environ
    text, path = env.get(ENV_KEYS), env.get(ENV_KEYS_FILE)
    if text and path:
        raise KeyConfigurationError(
            f"requestState keys: set {ENV_KEYS} or {ENV_KEYS_FILE}, not both")
    if text:
        try:
            return KeyRing.parse(text)
        except ValueError as exc:
            raise KeyConfigurationError(f"requestState keys: {ENV_KEYS}: {exc}") from None
    if path:
        source = FileKeySource(path)
        return KeyRing(source.keys(), source=source)
    return None


def request_state_keys(given: bytes | KeyRing | None = None, *, shared: bool = False,
                       environ: Mapping[str, str] | None = None) -> bytes | KeyRing:
    """The keys a starting server seals ``requestState`` with (see the module docstring).

    :param given: what the code passed, used as is.
    :param shared: the server is one of several processes serving the same clients (more
        than one worker, or a store other processes read): without configured keys it logs
        a warning -- or, with :data:`ENV_KEYS_REQUIRED` set, raises
        :class:`KeyConfigurationError` -- instead of drawing a key in silence.
    """
    if given:
        return given
    env = os.environ if environ is None else environ
    ring = configured_key_ring(env)
    if ring is not None:
        source = f"{ENV_KEYS_FILE} ({env.get(ENV_KEYS_FILE)})" if env.get(
            ENV_KEYS_FILE) else ENV_KEYS
        log.info("requestState keys: %s from %s, sealing with %s", len(ring.ids), source,
                 ring.ids[0])
        return ring
    if env.get(ENV_KEYS_REQUIRED, "") not in ("", "0"):
        raise KeyConfigurationError(
            f"requestState keys: {ENV_KEYS_REQUIRED} is set but neither {ENV_KEYS} nor "
            f"{ENV_KEYS_FILE} is: every process of this service needs the same keys")
    if shared:
        log.warning(
            "requestState keys: none configured, so this process drew its own; a "
            "requestState it seals will be refused by every other worker or host. Give "
            "every process the same ring in %s or %s", ENV_KEYS, ENV_KEYS_FILE)
    # One process: no other could open what it seals, so a key of its own loses nothing
    # and needs no setup (states do not survive a restart, which the retry recovers from by
    # starting the request over). A bare key, not a ring: its id is worked out when a state
    # is first sealed, so a server that never seals never loads hashlib (tests/
    # test_cold_imports.py).
    return os.urandom(32)


def worker_environment(workers: int, environ: Mapping[str, str] | None = None
                       ) -> dict[str, str]:
    """For a launcher that starts ``workers`` server processes on this host: what to add to
    their environment so that they all hold the same ring.

    With keys configured, nothing (the workers inherit the configuration, checked here
    first so that a bad one fails once, in the launcher). With :data:`ENV_KEYS_REQUIRED`
    set and none configured, :class:`KeyConfigurationError`. Otherwise one key drawn for all
    of them, in :data:`ENV_KEYS`, and -- for more than one worker -- one warning line: the
    workers of this launch agree, but another host or a restart will not."""
    env = os.environ if environ is None else environ
    if configured_key_ring(env) is not None:
        return {}
    if env.get(ENV_KEYS_REQUIRED, "") not in ("", "0"):
        raise KeyConfigurationError(
            f"requestState keys: {ENV_KEYS_REQUIRED} is set but neither {ENV_KEYS} nor "
            f"{ENV_KEYS_FILE} is: every process of this service needs the same keys")
    if workers > 1:
        log.warning(
            "requestState keys: none configured, so one key was drawn for these %d workers; "
            "a requestState they seal will be refused by other hosts and after a restart. "
            "Give every host the same ring in %s or %s", workers, ENV_KEYS, ENV_KEYS_FILE)
    return {ENV_KEYS: base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")}
