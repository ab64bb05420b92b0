"""The key ring that seals ``requestState``: one key seals, every key in the ring opens.

Theory of operation
-------------------
A sealed ``requestState`` (:mod:`mcp_sansio._stateless`) comes back on whatever process or
host the client's retry lands on, so every process of one service must be able to open what
any of them sealed, and the keys must be replaceable without refusing the states in flight.
A :class:`KeyRing` is an ordered list of HMAC keys: the **first** one seals, **any** of them
opens. Each sealed state names the key that sealed it by a short id, the key's fingerprint
(a truncated SHA-256 of the key), so the opener goes straight to that key and every host
derives the same ids from the same keys without being told them.

Rotation while traffic flows, across many hosts, is three steps, each waiting until every
host has the previous one:

1. add the new key at the end (every host can open with it; none seals with it yet);
2. move it to the front (hosts seal with it; states sealed with the old key still open);
3. after the longest ``requestState`` lifetime (its TTL plus the skew allowance), remove
   the old key.

Sealing with a key some host does not hold yet is the one way to lose a state, which is why
step 1 comes first. In one process, :meth:`KeyRing.rotate` does steps 1 and 2 at once.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from typing import Protocol

__all__ = ["MIN_KEY_BYTES", "KeyRing", "KeySource", "key_id"]

#: The shortest key accepted, in bytes. RFC 2104 section 3: a key shorter than the hash's
#: output (32 bytes for SHA-256) weakens the MAC and is "strongly discouraged"; longer
#: ones add nothing, so 32 random bytes is the key to make.
MIN_KEY_BYTES = 32

# A key id is 8 base64url characters (6 bytes of the fingerprint): enough that the few keys
# of one ring never collide by chance (and a collision would only refuse a state, since the
# MAC is still checked with the key the id led to), short enough to cost nothing on the wire.
_ID_BYTES = 6
_ID_RE = re.compile(r"[A-Za-z0-9_-]{8}")
# Separates the fingerprint's input from any other use of SHA-256 over the same key.
_ID_LABEL = b"mcp-sansio requestState key id\x00"


def key_id(key: bytes) -> str:
    """The id a sealed state names ``key`` by: its fingerprint, which reveals nothing of it
    (SHA-256 is one-way) and is the same on every host that holds the key."""
    import hashlib  # here: loads OpenSSL, which a server that never seals does without

    digest = hashlib.sha256(_ID_LABEL + key).digest()[:_ID_BYTES]
    return base64.urlsafe_b64encode(digest).decode("ascii")


def _decode_key(text: str) -> bytes:
    """One key as written in the configuration: base64, standard or URL-safe alphabet,
    padding optional (``openssl rand -base64 32`` and ``secrets.token_urlsafe(32)`` both
    fit)."""
    cleaned = text.strip().replace("-", "+").replace("_", "/")
    try:
        key = base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a key is not valid base64") from None
    return key


class KeySource(Protocol):
    """Where a :class:`KeyRing` gets its keys when they may change while it runs (a shared
    store, a file that is re-read). ``keys()`` returns the whole ring, the sealing key
    first, and must answer from memory: the ring calls it each time it seals or opens, so a
    source that reads a file or the network refreshes its copy on its own and hands that
    copy out here."""

    def keys(self) -> Sequence[bytes]: ...


class KeyRing:
    """HMAC keys for sealing ``requestState``: the first seals, every one opens (see the
    module docstring for rotation).

    :param keys: the keys, the sealing one first; each at least :data:`MIN_KEY_BYTES`.
    :param source: when given, the ring's keys are whatever the source answers (each use
        asks again); ``keys`` are the ones used until it answers something else, and
        :meth:`add` / :meth:`retire` change only the keys in hand until it does.
    """

    __slots__ = ("_keys", "_last", "_source")

    def __init__(self, keys: Iterable[bytes] = (), *, source: KeySource | None = None) -> None:
        self._source = source
        self._last: Sequence[bytes] | None = None
        self._keys: tuple[tuple[str, bytes], ...] = ()
        self._set(keys)
        if source is not None:
            self._sync()
        if not self._keys:
            raise ValueError("a key ring needs at least one key")

    @classmethod
    def parse(cls, text: str) -> KeyRing:
        """A ring from its text form: keys in base64 (standard or URL-safe, padding
        optional), separated by newlines, spaces or commas, the sealing key first; ``#``
        starts a comment that runs to the end of its line. Raises :class:`ValueError`
        naming the entry (by position, never by content) that is not a usable key."""
        entries = [entry for line in text.splitlines()
                   for entry in re.split(r"[\s,]+", line.split("#", 1)[0]) if entry]
        keys = []
        for number, entry in enumerate(entries, 1):
            try:
                keys.append(_checked(_decode_key(entry)))
            except ValueError as exc:
                raise ValueError(f"key {number}: {exc}") from None
        if not keys:
            raise ValueError("no key found (expected base64 keys, the sealing key first)")
        return cls(keys)

    def __repr__(self) -> str:
        # Ids only: a repr may reach a log, and the keys are secrets.
        return f"<KeyRing {' '.join(self.ids)}>"

    @property
    def ids(self) -> tuple[str, ...]:
        """The key ids, the sealing key's first."""
        self._sync()
        return tuple(kid for kid, _ in self._keys)

    def keys(self) -> tuple[bytes, ...]:
        """The keys, the sealing key first (a ring is a :class:`KeySource` too)."""
        self._sync()
        return tuple(key for _, key in self._keys)

    def sealing_key(self) -> tuple[str, bytes]:
        """The id and the key that seal."""
        self._sync()
        return self._keys[0]

    def find(self, kid: str) -> bytes | None:
        """The key whose id is ``kid``, if the ring holds it."""
        self._sync()
        for known, key in self._keys:
            if known == kid:
                return key
        return None

    def add(self, key: bytes, *, seal: bool = False) -> str:
        """Add ``key`` (rotation step 1; with ``seal=True`` steps 1 and 2: it seals from now
        on). Returns its id. A key already in the ring moves instead."""
        kid = key_id(_checked(key))
        rest = [(known, k) for known, k in self._keys if known != kid]
        self._keys = ((kid, key), *rest) if seal else (*rest, (kid, key))
        return kid

    def rotate(self, key: bytes) -> str:
        """Seal with ``key`` from now on; the keys before it still open."""
        return self.add(key, seal=True)

    def retire(self, kid: str) -> None:
        """Remove the key ``kid`` (rotation step 3): what it sealed no longer opens. The
        sealing key cannot be retired while it is the only one."""
        rest = tuple((known, k) for known, k in self._keys if known != kid)
        if not rest:
            raise ValueError("cannot retire the ring's last key")
        self._keys = rest

    def _set(self, keys: Iterable[bytes]) -> None:
        pairs: list[tuple[str, bytes]] = []
        for key in keys:
            kid = key_id(_checked(key))
            if all(kid != known for known, _ in pairs):
                pairs.append((kid, key))
        self._keys = tuple(pairs)

    def _sync(self) -> None:
        source = self._source
        if source is None:
            return
        keys = source.keys()
        if keys is self._last or not keys:
            # Unchanged, or a source with nothing to say (a store not reached yet): the
            # keys in hand stay -- an empty ring could open nothing.
            return
        if self._last is not None and list(keys) == list(self._last):
            self._last = keys
            return
        try:
            self._set(keys)
        except (TypeError, ValueError):
            # A source that hands out a key too short to use: the keys in hand stay (a
            # source is expected to check what it hands out; this is the last line).
            return
        self._last = keys


def _checked(key: bytes) -> bytes:
    if not isinstance(key, bytes | bytearray):
        raise TypeError("a key is bytes")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"a key must be at least {MIN_KEY_BYTES} bytes (it has {len(key)})")
    return bytes(key)
