"""The JSON seam (``mcp_sansio._json``): the stdlib and orjson backends must agree.

The stdlib is the reference; orjson is a fast path that must give the same answer or step
aside. "The same answer" is checked strictly: both backends decode a text to values equal in
type and value (``1`` is not ``1.0``, ``-0.0`` is not ``0.0``), or both raise
:class:`DecodeError` -- never any other exception; both encode a value to bytes that decode to
the same thing, or both raise :class:`EncodeError`.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sansio import _json

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

BACKENDS = ("stdlib", "orjson")


# -- helpers -----------------------------------------------------------------------------------


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that also compares types (``True != 1 != 1.0``) and the sign of zero.

    Iterative, so that it works on values nested deeper than the recursion limit."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, float):
            if math.isnan(x) or math.isnan(y):
                if not (math.isnan(x) and math.isnan(y)):
                    return False
            elif x != y or math.copysign(1.0, x) != math.copysign(1.0, y):
                return False
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


def decode_with(backend: str, data: bytes, max_depth: int = 128) -> tuple[str, Any]:
    """("ok", value) or ("DecodeError", None); any other exception propagates (a failure)."""
    previous = _json.backend
    _json.use_backend(backend)
    try:
        return "ok", _json.loads(data, max_depth)
    except _json.DecodeError as exc:
        assert str(exc), "a DecodeError carries its reason"
        return "DecodeError", None
    finally:
        _json.use_backend(previous)


def encode_with(backend: str, value: Any) -> tuple[str, bytes | None]:
    previous = _json.backend
    _json.use_backend(backend)
    try:
        return "ok", _json.dumps(value)
    except _json.EncodeError:
        return "EncodeError", None
    finally:
        _json.use_backend(previous)


def assert_decoders_agree(data: bytes, max_depth: int = 128) -> tuple[str, Any]:
    std = decode_with("stdlib", data, max_depth)
    fast = decode_with("orjson", data, max_depth)
    assert std[0] == fast[0], f"{data[:80]!r}: stdlib {std[0]}, orjson {fast[0]}"
    assert strict_equal(std[1], fast[1]), f"{data[:80]!r}: {std[1]!r} != {fast[1]!r}"
    return std


def nested(depth: int, inner: bytes = b"1", kinds: str = "[") -> bytes:
    """``depth`` levels of containers around ``inner``; ``kinds`` cycles "[" and "{"."""
    opening, closing = [], []
    for level in range(depth):
        if kinds[level % len(kinds)] == "[":
            opening.append(b"[")
            closing.append(b"]")
        else:
            opening.append(b'{"k":')
            closing.append(b"}")
    return b"".join(opening) + inner + b"".join(reversed(closing))


def real_depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, list | dict):
            depth += 1
            stack.extend((v, depth) for v in (item.values() if isinstance(item, dict) else item))
        deepest = max(deepest, depth)
    return deepest


# -- strategies --------------------------------------------------------------------------------

#: Text that likes brackets, quotes and backslashes (they confuse naive depth scanners).
tricky_text = st.text(
    alphabet=st.one_of(st.sampled_from('[]{}"\\\n\t/ \x00\x1f\u2028\U0001f600é'),
                       st.characters(exclude_categories=("Cs",))),
    max_size=12,
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    tricky_text,
)

json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(tricky_text, children, max_size=4),
    ),
    max_leaves=20,
)


@st.composite
def formatted_json(draw: st.DrawFn) -> bytes:
    """A valid JSON text in one of many legal spellings."""
    value = draw(json_values)
    text = json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 1, "\t"])),
        separators=draw(st.sampled_from([None, (",", ":"), (" , ", " : ")])),
    )
    ws = st.text(alphabet=" \t\r\n", max_size=3)
    return (draw(ws) + text + draw(ws)).encode("utf-8")


#: Number spellings, legal and not, including every overflow family.
NUMBER_TOKENS = [
    b"0", b"-0", b"1", b"-1", b"0.5", b"-0.0", b"1e2", b"1E+2", b"1e-2", b"1.5e308", b"1.8e308",
    b"1e400", b"-1e400", b"1e-400", b"4.9e-324", b"2.5e-324", b"1e99999999999999999999",
    b"9223372036854775807", b"-9223372036854775808", b"-9223372036854775809",
    b"18446744073709551615", b"18446744073709551616", b"123456789012345678901234567890",
    b"9" * 308, b"9" * 309, b"9" * 400, b"-" + b"9" * 400, b"1" * 5000, b"0." + b"1" * 400,
    b"01", b".5", b"+1", b"1.", b"-", b"0x10", b"1e", b"NaN", b"-NaN", b"Infinity",
    b"-Infinity", b"nan", b"inf",
]
#: String spellings: lone and paired surrogates, escapes, brackets, raw control and bad UTF-8.
STRING_TOKENS = [
    b'""', b'"a"', b'"\\ud800"', b'"\\udc00"', b'"\\uDBFF"', b'"\\ud83d\\ude00"',
    b'"\\ud83d\\u0041"', b'"\\ud83dx"', b'"\\\\ud800"', b'"\\u0000"', b'"[[[[{{{{"',
    b'"]]]]}}}}"', b'"\\"[[["', b'"\\\\"', b'"\\x"', b'"\\u12"', b'"a\nb"', b'"\t"',
    b'"\x01"', b'"\x7f"', b'"\xff"', b'"\xc3"', b'"\xc3\xa9"', b'"\xed\xa0\x80"',
    b'"\xf4\x90\x80\x80"', b'"\xc0\xaf"', b'"\xe2\x80\xa8"', b'"unterminated',
]
LITERAL_TOKENS = [b"true", b"false", b"null", b"True", b"nul", b"undefined"]
FRAGMENTS = [b",", b"[", b"]", b"{", b"}", b":", b'"', b"\\", b"\xef\xbb\xbf", b"\xff", b"\x00",
             b" ", b"\n", b"\r", b"\x0b", b"\x0c", b"\xa0", b"//", b"/*x*/"]


@st.composite
def grammar_json(draw: st.DrawFn, depth: int = 0) -> bytes:
    """JSON built token by token, with overflowing numbers, odd strings, trailing commas."""
    choice = draw(st.integers(0, 5 if depth < 4 else 2))
    if choice == 0:
        return draw(st.sampled_from(NUMBER_TOKENS))
    if choice == 1:
        return draw(st.sampled_from(STRING_TOKENS))
    if choice == 2:
        return draw(st.sampled_from(LITERAL_TOKENS))
    items = draw(st.lists(grammar_json(depth + 1), max_size=3))
    trailing = b"," if draw(st.integers(0, 7)) == 0 else b""
    if choice in (3, 4):
        return b"[" + b",".join(items) + trailing + b"]"
    keys = draw(st.lists(st.sampled_from([*STRING_TOKENS[:12], b"1", b"null"]),
                         min_size=len(items), max_size=len(items)))
    pairs = [k + b":" + v for k, v in zip(keys, items, strict=True)]
    return b"{" + b",".join(pairs) + trailing + b"}"


@st.composite
def mutated_json(draw: st.DrawFn) -> bytes:
    """A valid text with a few bytes inserted, deleted or replaced."""
    data = bytearray(draw(st.one_of(formatted_json(), grammar_json())))
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(data)))
        action = draw(st.integers(0, 2))
        if action == 0:
            data[pos:pos] = draw(st.sampled_from(FRAGMENTS + NUMBER_TOKENS[:20] + STRING_TOKENS))
        elif action == 1:
            del data[pos : pos + draw(st.integers(1, 3))]
        elif pos < len(data):
            data[pos] = draw(st.integers(0, 255))
    return bytes(data)


@st.composite
def bom_wrapped(draw: st.DrawFn) -> bytes:
    return b"\xef\xbb\xbf" + draw(formatted_json())


json_texts = st.one_of(
    formatted_json(),
    grammar_json(),
    mutated_json(),
    bom_wrapped(),
    st.binary(max_size=40),
)


# -- decoding ----------------------------------------------------------------------------------


@SETTINGS
@given(json_texts)
def test_backends_decode_alike(data: bytes) -> None:
    assert_decoders_agree(data)


@SETTINGS
@given(formatted_json())
def test_valid_json_decodes_to_the_reference_value(data: bytes) -> None:
    # Every generated value stays within 64-bit integers and finite floats, so the plain
    # stdlib json module is a valid oracle for it.
    outcome, value = assert_decoders_agree(data)
    assert outcome == "ok"
    assert strict_equal(value, json.loads(data))


EDGE_TEXTS = {
    # text: expected outcome (None: refused, else the value)
    b'"\\ud800"': None,
    b'"\\udc00"': None,
    b'"x\\udbff"': None,
    b'{"\\ud800": 1}': None,
    b'"\\ud83d\\u0041"': None,
    b'"\\ud83d\\ude00"': "\U0001f600",
    # a lone surrogate hidden by a duplicate key is still a lone surrogate in the text
    b'{"a":"\\ud800","a":0}': None,
    b'{"a":["\\udc00"],"a":0}': None,
    b'"\\\\ud800"': "\\ud800",
    b"1e400": None,
    b"-1e400": None,
    b"1.8e308": None,
    b"1e99999999999999999999": None,
    b"1.5e308": 1.5e308,
    b"1e-400": 0.0,
    b"9" * 400: None,  # an integer too large even for a float
    b"-" + b"9" * 400: None,
    b"1" * 5000: None,  # beyond the interpreter's int-conversion limit, too
    b"18446744073709551615": 2**64 - 1,
    b"18446744073709551616": float(2**64),  # beyond 64 bits: a float, as orjson does
    b"-9223372036854775808": -(2**63),
    b"-9223372036854775809": float(-(2**63) - 1),
    b"\xef\xbb\xbf{}": None,
    b"\xef\xbb\xbf1": None,
    b"NaN": None,
    b"Infinity": None,
    b"-Infinity": None,
    b"[NaN]": None,
    b"[1,]": None,
    b'{"a":1,}': None,
    b"[,1]": None,
    b"\xff": None,
    b'"\xc3"': None,
    b'"\xed\xa0\x80"': None,  # a surrogate encoded in UTF-8 (CESU)
    b'"\xc0\xaf"': None,  # overlong encoding
    b'"\xf4\x90\x80\x80"': None,  # beyond U+10FFFF
    b'"\xe2\x80\xa8"': "\u2028",
    b"": None,
    b" \t\r\n": None,
    b"[1] 2": None,
    b"[1]\x0c": None,
    b'"a\nb"': None,
    b'"\x1f"': None,
    b'"\x7f"': "\x7f",
    b'"\\u0000"': "\x00",
    b'["[[[", "]]]", "{", "\\"["]': ["[[[", "]]]", "{", '"['],
    b" [ 1 , 2 ] \r\n": [1, 2],
    b'{"a":1,"a":2}': {"a": 2},
}


@pytest.mark.parametrize("data", list(EDGE_TEXTS), ids=lambda d: f"{d[:20]!r}({len(d)})")
def test_edge_cases_decode_as_pinned(data: bytes) -> None:
    outcome, value = assert_decoders_agree(data)
    expected = EDGE_TEXTS[data]
    if expected is None:
        assert outcome == "DecodeError", f"{data[:40]!r} decoded to {value!r}"
    else:
        assert outcome == "ok"
        assert strict_equal(value, expected)


@SETTINGS
@given(st.integers(min_value=-(10**1000), max_value=10**1000))
def test_any_integer_token_decodes_alike(number: int) -> None:
    # In 64-bit range: an int. Beyond it: the nearest float, or refused when even that
    # overflows -- but the same answer from both backends, and never a foreign exception.
    outcome, value = assert_decoders_agree(str(number).encode())
    if -(2**63) <= number <= 2**64 - 1:
        assert (outcome, value) == ("ok", number)
        assert type(value) is int
    elif outcome == "ok":
        assert type(value) is float
        assert math.isfinite(value)
        assert value == float(number)


@SETTINGS
@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["r", "e", ".17g"]))
def test_float_spellings_decode_alike(number: float, spelling: str) -> None:
    text = repr(number) if spelling == "r" else format(number, spelling)
    if "." not in text and "e" not in text:
        text += ".0"
    outcome, value = assert_decoders_agree(text.encode())
    assert outcome == "ok"
    assert strict_equal(value, float(text))


def test_decoded_values_are_always_finite() -> None:
    # A number too large for a float must be refused, never turned into inf: inf cannot be
    # written back as JSON.
    for data in (b"9" * 400, b"[" + b"1" * 320 + b"]", b"1e400", b'{"id":' + b"7" * 330 + b"}"):
        for backend in BACKENDS:
            outcome, value = decode_with(backend, data)
            assert outcome == "DecodeError", f"{backend}: {data[:20]!r}... -> {value!r}"


# -- depth limit -------------------------------------------------------------------------------


@pytest.mark.parametrize("kinds", ["[", "{", "[{", "{["])
@pytest.mark.parametrize("max_depth", [1, 2, 3, 10, 128])
def test_depth_limit_is_exact(kinds: str, max_depth: int) -> None:
    accepted = nested(max_depth, kinds=kinds)
    outcome, value = assert_decoders_agree(accepted, max_depth)
    assert outcome == "ok"
    assert real_depth(value) == max_depth
    assert assert_decoders_agree(nested(max_depth + 1, kinds=kinds), max_depth)[0] == (
        "DecodeError"
    )
    # Empty innermost containers count as a level too.
    empty = nested(max_depth - 1, inner=b"[]" if kinds[0] == "[" else b"{}", kinds=kinds)
    assert assert_decoders_agree(empty, max_depth)[0] == "ok"
    assert assert_decoders_agree(b"[" + empty + b"]", max_depth)[0] == "DecodeError"


def test_scalars_have_depth_zero() -> None:
    for data in (b"1", b'"[[["', b"null"):
        assert assert_decoders_agree(data, 0)[0] == "ok"
    assert assert_decoders_agree(b"[]", 0)[0] == "DecodeError"


@pytest.mark.parametrize(
    "inner",
    [b'"[[[[[[[[[[[[[[[["', b'"{{{{{{{{{{{{{{{{"', b'"\\"[[[[[[[[[[[[[["', b'"\\\\[[[[[[[[[[[["',
     b'["[[[[", "{{{{", "[[[["]', b'{"[[[[[[[[": "{{{{{{{{"}'],
)
@pytest.mark.parametrize("max_depth", [1, 5, 128])
def test_brackets_inside_strings_are_not_counted(inner: bytes, max_depth: int) -> None:
    own = 1 if inner[:1] in (b"[", b"{") else 0
    fits = nested(max_depth - own, inner=inner)
    outcome, value = assert_decoders_agree(fits, max_depth)
    assert outcome == "ok", fits
    assert real_depth(value) == max_depth
    # Closing brackets inside strings do not lower the count either.
    too_deep = nested(max_depth + 1, inner=b'"]]]]]]]]]]]]]]]]}}}}}}}}"')
    assert assert_decoders_agree(too_deep, max_depth)[0] == "DecodeError"
    too_deep = nested(max_depth + 1 - own, inner=inner)
    assert assert_decoders_agree(too_deep, max_depth)[0] == "DecodeError"


@SETTINGS
@given(json_values, st.integers(-1, 1))
def test_depth_limit_matches_the_real_depth(value: Any, delta: int) -> None:
    data = json.dumps(value).encode()
    depth = real_depth(value)
    max_depth = max(0, depth + delta)
    outcome, _ = assert_decoders_agree(data, max_depth)
    assert outcome == ("ok" if depth <= max_depth else "DecodeError")


@pytest.mark.parametrize("max_depth", [512, 1024, 2000])
def test_depth_limit_above_the_interpreters_recursion_limit(max_depth: int) -> None:
    # The limit is configurable (Connection(max_depth=...)). Whatever it is, the backends
    # must still agree and only ever raise DecodeError (never RecursionError).
    for depth in sorted({max_depth // 2, 1000, 1024, 1025, max_depth, max_depth + 1}):
        assert_decoders_agree(nested(depth, kinds="[{"), max_depth)


# -- encoding ----------------------------------------------------------------------------------


def assert_encoders_agree(value: Any) -> tuple[str, bytes | None]:
    std = encode_with("stdlib", value)
    fast = encode_with("orjson", value)
    assert std[0] == fast[0], f"{value!r}: stdlib {std[0]}, orjson {fast[0]} ({fast[1]!r})"
    if std[1] is not None and fast[1] is not None:
        assert strict_equal(json.loads(std[1]), json.loads(fast[1]))
        for out in (std[1], fast[1]):
            out.decode("utf-8")  # valid UTF-8
            assert b"\n" not in out and b"\r" not in out  # safe as one NDJSON line
    return std


def listify(value: Any) -> Any:
    """The value JSON gives back for ``value`` (tuples become lists)."""
    if isinstance(value, list | tuple):
        return [listify(v) for v in value]
    if isinstance(value, dict):
        return {k: listify(v) for k, v in value.items()}
    return value


@SETTINGS
@given(st.recursive(
    st.one_of(json_scalars, st.integers()),  # unbounded ints: orjson steps aside beyond 64 bits
    lambda c: st.one_of(st.lists(c, max_size=4), st.tuples(c, c),
                        st.dictionaries(tricky_text, c, max_size=4)),
    max_leaves=20,
))
def test_backends_encode_alike_and_round_trip(value: Any) -> None:
    outcome, data = assert_encoders_agree(value)
    assert outcome == "ok"
    assert data is not None
    assert strict_equal(json.loads(data), listify(value))


class Color(enum.Enum):
    RED = 1
    GREEN = "green"


class Odd(enum.Enum):
    """Members whose values JSON cannot hold."""

    NAN = float("nan")
    INF = float("inf")
    PAIR = (1, float("-inf"))
    SURROGATE = "\ud800"


@dataclasses.dataclass
class Point:
    x: int


def _circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


UNENCODABLE = {
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "nan in list": [1, float("nan")],
    "inf in dict": {"a": {"b": float("inf")}},
    "inf in tuple": (float("inf"),),
    "nan key": {float("nan"): 1},
    "lone surrogate": "\ud800",
    "lone low surrogate": "a\udfff",
    "surrogate key": {"\udc00": 1},
    "surrogate deep": [{"a": ["x\ud83d"]}],
    "set": {1, 2},
    "bytes": b"x",
    "bytearray": bytearray(b"x"),
    "object": object(),
    "complex": 1j,
    "tuple key": {(1,): 1},
    "circular": _circular(),
    # orjson writes these natively; the stdlib refuses them, and the stdlib is the reference.
    "dataclass": Point(1),
    "datetime": datetime.datetime(2020, 1, 2, 3, 4, 5),
    "date": datetime.date(2020, 1, 2),
    "time": datetime.time(1, 2),
    "dataclass in a message": {"jsonrpc": "2.0", "id": 1, "result": {"p": Point(2)}},
    # An Enum is written as its value: a value JSON cannot hold is refused like any other.
    "enum holding nan": Odd.NAN,
    "enum holding inf": [Odd.INF],
    "enum holding a tuple with -inf": {"a": Odd.PAIR},
    "enum holding a lone surrogate": Odd.SURROGATE,
    "enum key": {Color.RED: 1},
}


@pytest.mark.parametrize("name", list(UNENCODABLE))
def test_unencodable_values_are_refused_by_both(name: str) -> None:
    value = UNENCODABLE[name]
    for backend in BACKENDS:
        outcome, data = encode_with(backend, value)
        assert outcome == "EncodeError", f"{backend} wrote {data!r}"


def as_json(value: Any) -> Any:
    """What JSON gives back for ``value``: tuples become lists, an Enum its value, a UUID its
    string."""
    if isinstance(value, enum.Enum):
        return as_json(value.value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    return value


@SETTINGS
@given(st.recursive(
    st.one_of(json_scalars, st.sampled_from([Color.RED, Color.GREEN, uuid.UUID(int=7),
                                             uuid.UUID(int=2**128 - 1)])),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(tricky_text, c, max_size=4)),
    max_leaves=12,
))
def test_enums_and_uuids_are_written_alike(value: Any) -> None:
    # The project's choice (the JSON seam's _default): an Enum is written as its value and a
    # UUID as its string, by both backends.
    outcome, data = assert_encoders_agree(value)
    assert outcome == "ok"
    assert strict_equal(json.loads(data or b""), as_json(value))


@SETTINGS
@given(
    json_values,
    st.sampled_from([float("nan"), float("inf"), float("-inf"), "\ud800", "x\udc00y", {1, 2},
                     b"raw", object(), Point(3), datetime.date(2021, 1, 1), Odd.NAN, Odd.PAIR]),
    st.data(),
)
def test_one_bad_leaf_anywhere_is_refused_by_both(
    value: Any, bad: Any, data: st.DataObject
) -> None:
    # Plant the bad value at a random place in a good one.
    def plant(v: Any) -> Any:
        if isinstance(v, list) and data.draw(st.booleans()):
            pos = data.draw(st.integers(0, len(v)))
            return [*v[:pos], plant(v[pos]) if pos < len(v) else bad, *v[pos + 1 :]]
        if isinstance(v, dict) and v and data.draw(st.booleans()):
            key = data.draw(st.sampled_from(sorted(v)))
            return {**v, key: plant(v[key])}
        return [v, bad]

    assert assert_encoders_agree(plant(value))[0] == "EncodeError"


@pytest.mark.parametrize(
    "value",
    [2**64, -(2**63) - 1, 10**400, [1, 2**70], {1: "int key"}, {True: 1, None: 2, 1.5: 3}],
    ids=repr,
)
def test_values_orjson_cannot_write_fall_back_to_the_stdlib(value: Any) -> None:
    outcome, data = assert_encoders_agree(value)
    assert outcome == "ok"
    assert encode_with("orjson", value)[1] == data  # the stdlib's very bytes


@pytest.mark.parametrize(
    "value",
    [{"text": "null"}, [None, 0.0, -0.0, 1e-320, 5e-324, 1.7976931348623157e308],
     "\u2028\u2029\x00\x1f\x7f", {"": [{}, []]}],
    ids=repr,
)
def test_values_both_write_round_trip(value: Any) -> None:
    outcome, data = assert_encoders_agree(value)
    assert outcome == "ok"
    assert strict_equal(json.loads(data or b""), value)


def test_deeply_nested_values_encode_alike() -> None:
    value: Any = 1
    for _ in range(300):  # beyond orjson's own recursion limit for writing
        value = [value]
    assert assert_encoders_agree(value)[0] == "ok"
