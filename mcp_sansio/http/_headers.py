"""HTTP header helpers: case-insensitive lookup, media types, the ``=?base64?...?=`` value
encoding of 2026-07-28, ``x-mcp-header`` annotations, and Origin/Host allow-lists.

Theory of operation
-------------------
h11 hands headers over as a list of ``(name, value)`` byte pairs with lower-cased names.
:class:`Headers` wraps that list for lookups by name (case-insensitive, as RFC 9110 and the
MCP transports pages require), decoded into a dict once, at the first lookup.

2026-07-28 mirrors body fields into headers (``Mcp-Method``, ``Mcp-Name``,
``Mcp-Param-{Name}``; ``basic/transports/streamable-http.mdx``, "Request Metadata"). A value
that is not plain visible ASCII -- non-ASCII, control characters, leading or trailing
whitespace, or a value that itself looks like the sentinel -- travels as
``=?base64?{base64 of the UTF-8 bytes}?=``. :func:`encode_header_value` and
:func:`decode_header_value` implement that; :func:`param_headers` reads the ``x-mcp-header``
annotations of a tool's ``inputSchema`` (and refuses invalid ones, as clients must), and
:func:`param_matches` compares a header with the body value it mirrors (integers
numerically).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = [
    "LOCAL_HOSTS",
    "LOCAL_ORIGINS",
    "AllowList",
    "Headers",
    "accepts",
    "decode_header_value",
    "encode_header_value",
    "media_type",
    "param_headers",
    "param_matches",
    "param_value",
]


class Headers:
    """Read-only, case-insensitive view of an h11 header list (lower-cased byte names).

    The first lookup decodes the list into a dict (several values of one name joined with
    ``", "``), so that each later lookup is one dict access: the server reads 7 to 10
    headers of every request (Host, Origin, Content-Type, Accept, the protocol version, the
    session id or the mirrored ``Mcp-*`` headers), the client two of every response.
    """

    __slots__ = ("_map", "raw")

    def __init__(self, raw: Sequence[tuple[bytes, bytes]]) -> None:
        self.raw = raw
        self._map: dict[str, str] | None = None

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]]) -> Headers:
        return cls([(k.lower().encode("ascii"), v.encode("latin-1")) for k, v in pairs])

    @classmethod
    def from_raw(cls, items: Iterable[tuple[bytes, bytes]]) -> Headers:
        """From ``(name, value)`` byte pairs whose names may be in any case (h11's
        ``raw_items()``)."""
        return cls([(k.lower(), v) for k, v in items])

    def _decoded(self) -> dict[str, str]:
        raw = self.raw
        found = {k.decode("latin-1"): v.decode("latin-1") for k, v in raw}
        if len(found) != len(raw):
            found = self._joined()
        self._map = found
        return found

    def _joined(self) -> dict[str, str]:
        """The slow path of :meth:`_decoded`, for a list that repeats a name."""
        found: dict[str, str] = {}
        for k, v in self.raw:
            name = k.decode("latin-1")
            value = v.decode("latin-1")
            previous = found.get(name)
            found[name] = value if previous is None else f"{previous}, {value}"
        return found

    def decoded(self) -> dict[str, str]:
        """Every field as one dict, lower-case name -> value (several values joined with
        ``", "``): for a caller reading several fields, each then one dict access. Not to be
        changed."""
        found = self._map
        return found if found is not None else self._decoded()

    def get(self, name: str) -> str | None:
        """The value of ``name`` (several values are joined with ``", "``), or None."""
        found = self._map
        if found is None:
            found = self._decoded()
        return found.get(name.lower())

    def get_all(self, name: str) -> list[str]:
        key = name.lower().encode("ascii")
        return [v.decode("latin-1") for k, v in self.raw if k == key]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        found = self._map
        if found is None:
            found = self._decoded()
        return name.lower() in found

    def items(self) -> Iterator[tuple[str, str]]:
        for k, v in self.raw:
            yield k.decode("latin-1"), v.decode("latin-1")

    def with_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """``(name, value)`` of every header whose name starts with ``prefix`` (any case)."""
        key = prefix.lower().encode("ascii")
        return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in self.raw
                if k.startswith(key)]

    def __repr__(self) -> str:
        return f"Headers({list(self.items())!r})"


# -- media types -----------------------------------------------------------------------------


def media_type(value: str | None) -> str | None:
    """The bare media type of a ``Content-Type`` value, lower-cased (parameters dropped)."""
    if value is None:
        return None
    return value.split(";", 1)[0].strip().lower() or None


#: How many ``(Accept, media type)`` answers :func:`accepts` remembers before it starts
#: over: a client sends the same ``Accept`` on every request, and a server sees a handful of
#: distinct values (one per client library); the bound keeps odd or hostile values from
#: growing it.
_ACCEPTS_MEMO_SIZE = 128
_accepts_memo: dict[tuple[str, str], bool] = {}


def accepts(accept: str | None, wanted: str) -> bool:
    """Whether an ``Accept`` header admits the media type ``wanted`` (``type/subtype``).

    Wildcards count (``*/*``, ``text/*``); a range with ``q=0`` refuses. A missing header
    accepts nothing here: MCP clients MUST list what they accept.
    """
    if accept is None:
        return False
    key = (accept, wanted)
    known = _accepts_memo.get(key)
    if known is None:
        known = _accepts(accept, wanted)
        if len(_accepts_memo) >= _ACCEPTS_MEMO_SIZE:
            _accepts_memo.clear()
        _accepts_memo[key] = known
    return known


def _accepts(accept: str, wanted: str) -> bool:
    main, _, _sub = wanted.partition("/")
    best: tuple[int, bool] | None = None  # (specificity, acceptable)
    for item in accept.split(","):
        parts = item.split(";")
        rng = parts[0].strip().lower()
        if not rng:
            continue
        quality_zero = False
        for param in parts[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality_zero = float(value.strip()) == 0.0
                except ValueError:
                    quality_zero = False
        if rng == wanted:
            specificity = 2
        elif rng == f"{main}/*":
            specificity = 1
        elif rng == "*/*":
            specificity = 0
        else:
            continue
        if best is None or specificity > best[0]:
            best = (specificity, not quality_zero)
    return best is not None and best[1]


# -- the base64 sentinel (2026-07-28) --------------------------------------------------------

_SENTINEL_PREFIX = "=?base64?"
_SENTINEL_SUFFIX = "?="
_PLAIN = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?\Z")
_FIELD_VALUE = re.compile(r"[\x20-\x7e\t]*\Z")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")


def _is_sentinel(value: str) -> bool:
    return (value.startswith(_SENTINEL_PREFIX) and value.endswith(_SENTINEL_SUFFIX)
            and len(value) >= len(_SENTINEL_PREFIX) + len(_SENTINEL_SUFFIX))


def encode_header_value(value: str) -> str:
    """A header value carrying ``value``: as is when it is plain visible ASCII (inner spaces
    allowed), else ``=?base64?...?=`` over its UTF-8 bytes (also when it looks like the
    sentinel itself, so that decoding is never ambiguous)."""
    if value and _PLAIN.match(value) and not _is_sentinel(value):
        return value
    encoded = base64.b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii")
    return f"{_SENTINEL_PREFIX}{encoded}{_SENTINEL_SUFFIX}"


def decode_header_value(raw: str) -> str | None:
    """The value a header carries, or None when it is malformed (characters a header value
    may not hold, or a sentinel that is not valid base64 of UTF-8)."""
    if not _FIELD_VALUE.match(raw):
        return None
    if not _is_sentinel(raw):
        return raw
    body = raw[len(_SENTINEL_PREFIX):-len(_SENTINEL_SUFFIX)]
    try:
        return base64.b64decode(body.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


# -- x-mcp-header: tool parameters mirrored into Mcp-Param-{Name} ----------------------------

#: Integers in ``x-mcp-header`` parameters must be safe in JavaScript (transports page).
_MAX_SAFE_INTEGER = 2**53 - 1
_PRIMITIVE_TYPES = frozenset({"string", "integer", "boolean"})


def param_headers(input_schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The ``x-mcp-header`` annotations of a tool's ``inputSchema``: header name (the part
    after ``Mcp-Param-``) -> the chain of ``properties`` keys leading to the parameter.

    :raises ValueError: an annotation breaks a rule of
        ``2026-07-28/basic/transports/streamable-http.mdx`` ("Schema Extension"): empty or not
        an HTTP token, not unique (case-insensitively), on a parameter that is not a
        string/integer/boolean, or not reachable from the root through ``properties`` alone.
        A client MUST then leave the tool out of ``tools/list``.
    """
    found: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()

    def walk(schema: Any, path: tuple[str, ...], reachable: bool) -> None:
        if isinstance(schema, list):
            for item in schema:
                walk(item, path, False)
            return
        if not isinstance(schema, Mapping):
            return
        if "x-mcp-header" in schema:
            name = schema["x-mcp-header"]
            if not reachable or not path:
                raise ValueError("x-mcp-header is only allowed on a property reachable "
                                 "through 'properties' alone")
            if not isinstance(name, str) or not _TOKEN.match(name):
                raise ValueError(f"x-mcp-header {name!r} is not an HTTP field-name token")
            kind = schema.get("type")
            if kind not in _PRIMITIVE_TYPES:
                raise ValueError(f"x-mcp-header {name!r} is on a parameter of type {kind!r} "
                                 "(string, integer or boolean only)")
            if name.lower() in seen:
                raise ValueError(f"x-mcp-header {name!r} is not unique")
            seen.add(name.lower())
            found[name] = path
        for key, value in schema.items():
            if key == "properties" and isinstance(value, Mapping):
                for prop, sub in value.items():
                    walk(sub, (*path, str(prop)), reachable)
            elif key != "x-mcp-header" and isinstance(value, Mapping | list):
                walk(value, path, False)

    walk(input_schema, (), True)
    return found


_MISSING = object()


def param_value(arguments: Any, path: Sequence[str]) -> Any:
    """The value at ``path`` inside ``arguments``, or None when absent (or null)."""
    value = arguments
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key, _MISSING)
        if value is _MISSING:
            return None
    return value


def param_header_text(value: Any) -> str | None:
    """The header text for a mirrored parameter value (None: omit the header)."""
    if value is None:
        return None
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def param_matches(header: str, value: Any) -> bool:
    """Whether a decoded ``Mcp-Param-*`` header carries the body ``value`` (integers compare
    numerically, so ``42.0`` matches ``42``; booleans are ``true``/``false``)."""
    if value is True or value is False:
        return header == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            number = Decimal(header.strip())
        except InvalidOperation:
            return False
        if not number.is_finite():
            return False
        return number == Decimal(value) and abs(value) <= _MAX_SAFE_INTEGER
    if isinstance(value, str):
        return header == value
    return False


# -- Origin and Host allow-lists --------------------------------------------------------------

#: Host header values a local server accepts by default (any port).
LOCAL_HOSTS: tuple[str, ...] = ("localhost:*", "127.0.0.1:*", "[::1]:*")
#: Origins a local server accepts by default (any port, http or https).
LOCAL_ORIGINS: tuple[str, ...] = (
    "http://localhost:*", "https://localhost:*",
    "http://127.0.0.1:*", "https://127.0.0.1:*",
    "http://[::1]:*", "https://[::1]:*",
)


class AllowList:
    """A set of allowed ``Host`` or ``Origin`` values, compared case-insensitively.

    An entry ending in ``:*`` allows that value with any port or none (``localhost:*``
    matches ``localhost`` and ``localhost:8000``); ``*`` alone allows everything.
    """

    __slots__ = ("_any", "_any_port", "_exact", "_seen")

    def __init__(self, entries: Iterable[str]) -> None:
        self._exact: set[str] = set()
        self._any_port: set[str] = set()
        self._any = False
        # Answers already given, by value as received: every request carries a Host (and a
        # browser's an Origin), nearly always the same few. Bounded like accepts' memo.
        self._seen: dict[str, bool] = {}
        for raw in entries:
            entry = raw.strip().lower()
            if entry == "*":
                self._any = True
            elif entry.endswith(":*"):
                self._any_port.add(entry[:-2])
            else:
                self._exact.add(entry)

    def allows(self, value: str) -> bool:
        if self._any:
            return True
        seen = self._seen
        known = seen.get(value)
        if known is None:
            known = self._allows(value)
            if len(seen) >= _ACCEPTS_MEMO_SIZE:
                seen.clear()
            seen[value] = known
        return known

    def _allows(self, value: str) -> bool:
        value = value.strip().lower()
        if value in self._exact or value in self._any_port:
            return True
        base, sep, port = value.rpartition(":")
        return bool(sep) and port.isdigit() and base in self._any_port
