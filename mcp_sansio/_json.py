"""The JSON seam: the stdlib ``json`` by default, ``orjson`` when it is installed.

Theory of operation
-------------------
The stdlib is the *reference* behaviour; orjson is a fast path that must give the same
answer or step aside. Where the two libraries differ by nature we pin one behaviour and make
the other follow it:

* decoding is strict UTF-8 (no BOM, no UTF-16 sniffing, no lone surrogates from ``\\uD800``
  escapes) and strict RFC 8259 (no ``NaN``/``Infinity``, no number that overflows to an
  infinite float);
* integers beyond the 64-bit range decode as floats, as orjson does (so such an ``id`` is
  not an integer and is refused like any other float id);
* encoding refuses non-finite floats and lone surrogates, and accepts what the stdlib accepts
  (orjson falls back to the stdlib for the rare values it cannot write itself, e.g. integers
  beyond 64 bits or non-string keys).

Nesting depth is checked here, before parsing, so that neither library ever recurses deeper
than the configured limit (the stdlib would otherwise hit ``RecursionError`` and orjson stops
at its own fixed 1024).

``backend`` names the library in use; :func:`use_backend` switches it (tests run the whole
codec suite with both).
"""

from __future__ import annotations

import enum
import json as _stdjson
import json.encoder as _stdjson_encoder
import json.scanner as _stdjson_scanner
import math
import re
import sys
from collections.abc import Callable
from itertools import accumulate
from typing import Any

_orjson: Any
try:  # pragma: no cover - depends on the environment
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

__all__ = ["DecodeError", "EncodeError", "available_backends", "backend", "dumps", "loads"]


class DecodeError(ValueError):
    """The input is not acceptable JSON (reason in the message)."""


class EncodeError(ValueError):
    """The value cannot be written as standard JSON."""


_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1


def _parse_int(text: str) -> int | float:
    # Beyond 64 bits the value is read as a float, as orjson does; a 21+ character token is
    # beyond 64 bits whatever it holds, and skipping int() there avoids the interpreter's
    # limit on int conversion of very long digit strings.
    if len(text) <= 20:
        value = int(text)
        if _INT64_MIN <= value <= _UINT64_MAX:
            return value
    result = float(text)
    if math.isinf(result):
        raise DecodeError("number is too large to represent")
    return result


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise DecodeError("number is too large to represent")
    return value


def _parse_constant(name: str) -> Any:
    raise DecodeError(f"{name} is not valid JSON")


_std_decoder = _stdjson.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
)
def _default(value: Any) -> Any:
    """Values beyond JSON's own types that both backends write: an ``Enum`` as its value and
    a ``UUID`` as its string (orjson writes these natively; the stdlib follows it here).
    Everything else -- dataclasses, datetimes, arbitrary objects -- is refused by both."""
    if isinstance(value, enum.Enum):
        return value.value
    # A UUID exists only once its module is loaded: no need to load it to ask.
    uuid = sys.modules.get("uuid")
    if uuid is not None and isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_std_encoder = _stdjson.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), check_circular=True,
    default=_default,
)

# Strings are removed before the bracket scan, so that "[[[" inside a string does not count.
_STRING_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(sorted(set(range(256)) - {0x5B, 0x5D, 0x7B, 0x7D}))
_DEPTH_STEP = [0] * 256
_DEPTH_STEP[0x5B] = _DEPTH_STEP[0x7B] = 1
_DEPTH_STEP[0x5D] = _DEPTH_STEP[0x7D] = -1


def _too_deep(data: bytes, max_depth: int) -> bool:
    """True when the JSON text nests arrays/objects deeper than ``max_depth``.

    The common case costs two C-level ``count`` calls: a text with no more openers than
    ``max_depth`` cannot nest deeper. Only otherwise is the text scanned (linear time).
    """
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    brackets = _STRING_RE.sub(b"", data).translate(None, _NOT_BRACKET)
    # C-level iteration: the running depth is the prefix sum of +1/-1 steps.
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0) > max_depth


# Every escape in a JSON text, in order: "\\\\" is one escape, so backslash parity is kept.
_ESCAPE_RE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


def _has_lone_surrogate_escape(text: str) -> bool:
    """Whether the text (not the decoded value: a duplicate key may hide one) holds a
    ``\\uD800``-``\\uDFFF`` escape that is not half of a high+low pair."""
    pending_high = -1  # end offset of an unpaired high-surrogate escape
    for match in _ESCAPE_RE.finditer(text):
        escape = match.group(1)
        unit = int(escape[1:], 16) if escape[0] == "u" else -1
        if pending_high >= 0:
            if match.start() == pending_high and 0xDC00 <= unit <= 0xDFFF:
                pending_high = -1
                continue
            return True
        if 0xD800 <= unit <= 0xDBFF:
            pending_high = match.end()
        elif 0xDC00 <= unit <= 0xDFFF:
            return True
    return pending_high >= 0


def _has_nonfinite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, enum.Enum):  # written as its value (see _default)
            stack.append(item.value)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


# The C encoder and scanner behind JSONEncoder/JSONDecoder, built once: JSONEncoder.encode
# rebuilds its encoder on every call and JSONDecoder.decode adds Python-level wrapping, about
# a third of a small round trip. Anything unusual takes the full path below.
_c_make_encoder: Any = getattr(_stdjson_encoder, "c_make_encoder", None)
_c_make_scanner: Any = getattr(_stdjson_scanner, "c_make_scanner", None)
_c_encode: Any = (
    _c_make_encoder(
        None, _default, _stdjson_encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if _c_make_encoder is not None
    else None
)
_c_scan: Any = _c_make_scanner(_std_decoder) if _c_make_scanner is not None else None


def _std_loads(data: bytes) -> Any:
    if _c_scan is None:  # pragma: no cover - CPython always has the C scanner
        return _std_loads_full(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _std_loads_full(data)
    if "\\u" in text:  # escapes may hide surrogates: the full path checks them
        return _std_loads_full(data)
    try:
        value, end = _c_scan(text, 0)
    except (StopIteration, ValueError, RecursionError):
        return _std_loads_full(data)
    if end != len(text):
        return _std_loads_full(data)
    return value


def _std_loads_full(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"invalid UTF-8 at byte {exc.start}") from None
    try:
        value = _std_decoder.decode(text)
    except _stdjson.JSONDecodeError as exc:
        raise DecodeError(exc.msg) from None
    except RecursionError:  # only when max_depth is set above the interpreter's limit
        raise DecodeError("JSON nested too deeply to parse") from None
    # Only an escape can produce a surrogate from valid UTF-8; look only if one may exist.
    if ("\\ud" in text or "\\uD" in text) and _has_lone_surrogate_escape(text):
        raise DecodeError("lone surrogate in string")
    return value


def _std_dumps(value: Any) -> bytes:
    try:
        if _c_encode is not None:
            return "".join(_c_encode(value, 0)).encode("utf-8")
        return _std_encoder.encode(value).encode("utf-8")  # pragma: no cover
    except (TypeError, ValueError, RecursionError) as exc:
        raise EncodeError(str(exc)) from None
    except UnicodeEncodeError:  # pragma: no cover - subclass of ValueError, kept for clarity
        raise EncodeError("lone surrogate in string") from None


def _orjson_loads(data: bytes) -> Any:
    assert _orjson is not None
    try:
        return _orjson.loads(data)
    except _orjson.JSONDecodeError as exc:
        raise DecodeError(exc.msg) from None


def _orjson_dumps(value: Any) -> bytes:
    assert _orjson is not None
    try:
        out: bytes = _orjson.dumps(value, default=_default, option=_ORJSON_OPTIONS)
    except (_orjson.JSONEncodeError, TypeError):
        # orjson refuses some values the stdlib writes (64-bit overflow, int keys): the
        # stdlib's answer is the reference, whether it writes them or refuses.
        return _std_dumps(value)
    # orjson writes NaN/Infinity as null; "null" in the output is the only place one can hide.
    if b"null" in out and _has_nonfinite(value):
        raise EncodeError("Out of range float values are not JSON compliant")
    # orjson's result keeps a ~4 KiB allocation whatever its length: copy it, so that a
    # queued message costs its size (measured in benchmarks/pending.py).
    return bytes(memoryview(out))


# Hand dataclasses, datetimes and str/int/dict/list subclasses to _default, as the stdlib
# does, instead of letting orjson write them its own way.
_ORJSON_OPTIONS = (
    _orjson.OPT_PASSTHROUGH_DATACLASS
    | _orjson.OPT_PASSTHROUGH_DATETIME
    | _orjson.OPT_PASSTHROUGH_SUBCLASS
    if _orjson is not None
    else 0
)

backend: str = "stdlib"
_loads: Callable[[bytes], Any] = _std_loads
_dumps: Callable[[Any], bytes] = _std_dumps


def available_backends() -> list[str]:
    """The JSON backends usable here: always ``"stdlib"``, plus ``"orjson"`` if installed."""
    return ["stdlib", "orjson"] if _orjson is not None else ["stdlib"]


def use_backend(name: str) -> None:
    """Select the JSON backend (``"stdlib"`` or ``"orjson"``) for the whole process."""
    global backend, _loads, _dumps, dumps
    if name == "orjson":
        if _orjson is None:
            raise ValueError("orjson is not installed (pip install 'mcp-sansio[fast]')")
        backend, _loads, _dumps = "orjson", _orjson_loads, _orjson_dumps
    elif name == "stdlib":
        backend, _loads, _dumps = "stdlib", _std_loads, _std_dumps
    else:
        raise ValueError(f"unknown JSON backend {name!r}")
    dumps = _dumps


#: The deepest nesting ever parsed, whatever ``max_depth`` asks: the stdlib's parser recurses
#: once per level and the interpreter stops it near 1000 frames (orjson stops at 1024), so
#: above this the two backends could not agree.
DEPTH_CEILING = 512


def loads(data: bytes, max_depth: int) -> Any:
    """Decode one JSON text, refusing anything nested deeper than ``max_depth`` (itself
    capped at :data:`DEPTH_CEILING`)."""
    max_depth = min(max_depth, DEPTH_CEILING)
    # The cheap half of _too_deep inline (two C-level counts): most texts stop here.
    if data.count(b"[") + data.count(b"{") > max_depth and _too_deep(data, max_depth):
        raise DecodeError(f"JSON nested deeper than {max_depth} levels")
    return _loads(data)


#: Encode a value as compact UTF-8 JSON (``EncodeError`` when it cannot be written). It is
#: the selected backend's own function, rebound by :func:`use_backend`, so that an encode
#: costs one call (the seam measured +1.7 us per round trip over bare orjson with its
#: wrapper frames: ``benchmarks/README.md``, hot-spot item 5).
dumps: Callable[[Any], bytes] = _std_dumps


if _orjson is not None:  # pragma: no branch
    use_backend("orjson")
