"""Hypothesis strategies from JSON Schema: the subset MCP's schemas and tools' input schemas use.

Theory of operation
-------------------
:class:`SchemaStrategies` turns one schema node into a strategy for values that validate
against it. It covers what the official MCP schemas use (``type``, ``properties``,
``required``, ``additionalProperties``, ``items``, ``minItems``/``maxItems``, ``enum``,
``const``, ``anyOf``, ``allOf``, ``$ref``, ``minimum``/``maximum``, ``format``) and the
usual extras of tool input schemas written by hand or by pydantic (``oneOf``,
``exclusiveMinimum``/``exclusiveMaximum``, ``minLength``/``maxLength``, ``pattern``,
``uniqueItems``, ``prefixItems``, ``nullable`` types). A keyword it does not know raises
:class:`UnsupportedSchema` when the strategy is built, so callers can fall back.

Recursion (``JSONValue``, content blocks inside tool results inside sampling messages)
goes through ``$ref`` only; each reference is followed lazily (``st.deferred``) and counted,
and beyond ``max_depth`` levels only what is required is generated -- optional properties
are left out, arrays get their minimum length and free-form maps are empty -- so every
value is finite and small.

Values are kept readable and portable: integers within +-2**53 (exact in every JSON
library), finite floats, short strings, URIs that look like URIs, base64 that decodes.
With ``magnitude`` set (what tool arguments get unless ``--wild``), numbers are realistic: a
side the schema bounds (``minimum``/``maximum``) keeps its bound, an open side stays within
``magnitude`` of the other bound or of zero -- a ``seconds`` argument is not 589789924.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

__all__ = ["SchemaStrategies", "UnsupportedSchema", "json_values"]

#: Keywords that only annotate.
_ANNOTATIONS = frozenset({
    "description", "title", "examples", "default", "$comment", "$schema", "$id", "deprecated",
    "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "$anchor", "$defs",
    "definitions",
})
_KNOWN = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "prefixItems",
    "minItems", "maxItems", "uniqueItems", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format",
    "minLength", "maxLength", "pattern", "minProperties", "maxProperties", "nullable",
}) | _ANNOTATIONS

_SAFE_INT = 2**53 - 1
_FREE_KEYS = ("a", "b", "key", "note", "x-1", "com.example/tag")


class UnsupportedSchema(ValueError):
    """The schema uses something the strategy builder does not cover."""


def _scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(), st.integers(-1000, 1000),
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), _text(),
    )


def _text(min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[str]:
    # Printable, no surrogates (never encodable as UTF-8), mostly ASCII for readable output.
    alphabet = st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(blacklist_categories=("Cs", "Cc")),
    )
    return st.text(alphabet, min_size=min_size, max_size=max(min_size, max_size))


def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Small arbitrary JSON values (any type)."""
    return st.recursive(
        _scalars(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(_FREE_KEYS), inner, max_size=3),
        ),
        max_leaves=max_leaves,
    )


def _uris() -> st.SearchStrategy[str]:
    segment = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-_"), min_size=1,
                      max_size=8)
    return st.one_of(
        st.builds("file:///{}/{}".format, segment, segment),
        st.builds("https://example.com/{}".format, segment),
        st.builds("memo://{}".format, segment),
    )


_FORMATS: dict[str, st.SearchStrategy[str]] = {
    "uri": _uris(),
    "uri-reference": _uris(),
    "iri": _uris(),
    "uri-template": st.sampled_from(["file:///{path}", "memo://{name}",
                                     "https://example.com/{id}/items"]),
    "byte": st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode("ascii")),
    "date-time": st.sampled_from(["2025-01-02T03:04:05Z", "2026-07-28T12:00:00+02:00"]),
    "date": st.sampled_from(["2025-01-02", "2026-07-28"]),
    "email": st.sampled_from(["someone@example.com", "a.b@example.org"]),
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class SchemaStrategies:
    """Strategies for the definitions of one schema document.

    :param definitions: ``{name: schema}``, referenced as ``#/$defs/name`` (or
        ``#/definitions/name``).
    :param max_depth: how many references deep optional content is still generated.
    """

    def __init__(self, definitions: Mapping[str, Any] | None = None, *, max_depth: int = 3,
                 magnitude: float | None = None):
        self.definitions = dict(definitions or {})
        self.max_depth = max_depth
        #: None: numbers anywhere in range (extremes included); else open sides stay within
        #: this distance of the other bound or of zero.
        self.magnitude = magnitude
        self._refs: dict[tuple[str, int], st.SearchStrategy[Any]] = {}

    def definition(self, name: str) -> st.SearchStrategy[Any]:
        """Values valid as the definition ``name``."""
        return self.build({"$ref": f"#/$defs/{name}"})

    def build(self, node: Any, depth: int = 0) -> st.SearchStrategy[Any]:
        """Values valid against the schema ``node``."""
        if node is True or node == {}:
            return json_values() if depth <= self.max_depth else _scalars()
        if node is False:
            raise UnsupportedSchema("the schema 'false' admits no value")
        if not isinstance(node, Mapping):
            raise UnsupportedSchema(f"not a schema: {node!r}")
        unknown = set(node) - _KNOWN
        if unknown:
            raise UnsupportedSchema(f"unsupported keywords {sorted(unknown)}")
        if "$ref" in node:
            return self._ref(node, depth)
        if "allOf" in node:
            return self.build(self._merge_all(node), depth)
        for key in ("anyOf", "oneOf"):
            if key in node:
                rest = {k: v for k, v in node.items() if k != key and k not in _ANNOTATIONS}
                options = [self.build(_merge(rest, option) if rest else option, depth)
                           for option in node[key]]
                if not options:
                    raise UnsupportedSchema(f"empty {key}")
                return st.one_of(*options)
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            if not node["enum"]:
                raise UnsupportedSchema("empty enum")
            return st.sampled_from(list(node["enum"]))
        types = node.get("type")
        if types is None:
            types = self._implied_type(node)
        if isinstance(types, list):
            if not types:
                raise UnsupportedSchema("empty type list")
            return st.one_of(*[self._typed(node, t, depth) for t in types])
        if node.get("nullable") is True:
            return st.one_of(st.none(), self._typed(node, str(types), depth))
        return self._typed(node, str(types), depth)

    # -- pieces --------------------------------------------------------------------------------

    def _ref(self, node: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
        ref = str(node["$ref"])
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix):
                name = ref[len(prefix):]
                break
        else:
            raise UnsupportedSchema(f"unsupported reference {ref!r}")
        if name not in self.definitions:
            raise UnsupportedSchema(f"unknown definition {name!r}")
        rest = {k: v for k, v in node.items() if k != "$ref" and k not in _ANNOTATIONS}
        if rest:  # 2020-12 allows siblings of $ref: both apply
            return self.build({"allOf": [self.definitions[name], rest]}, depth)
        level = min(depth + 1, self.max_depth + 1)
        key = (name, level)
        found = self._refs.get(key)
        if found is None:
            # Cached before it is built, so that a recursive definition finds itself.
            built: dict[str, st.SearchStrategy[Any]] = {}
            found = st.deferred(lambda: built["strategy"])
            self._refs[key] = found
            try:
                built["strategy"] = self.build(self.definitions[name], level)
            except UnsupportedSchema:
                del self._refs[key]
                raise
        return found

    def _deref(self, node: Any) -> Any:
        for _ in range(64):
            if not (isinstance(node, Mapping) and "$ref" in node):
                return node
            name = str(node["$ref"]).rsplit("/", 1)[-1]
            if name not in self.definitions:
                raise UnsupportedSchema(f"unknown definition {name!r}")
            rest = {k: v for k, v in node.items() if k != "$ref"}
            node = _merge(self.definitions[name], rest) if rest else self.definitions[name]
        raise UnsupportedSchema("reference loop")

    def _merge_all(self, node: Mapping[str, Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            resolved = self._deref(part)
            if "allOf" in resolved:
                resolved = self._merge_all(resolved)
            merged = _merge(merged, resolved)
        return merged

    @staticmethod
    def _implied_type(node: Mapping[str, Any]) -> str | list[str]:
        if "properties" in node or "additionalProperties" in node or "required" in node:
            return "object"
        if "items" in node or "prefixItems" in node:
            return "array"
        if {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} & set(node):
            return "number"
        if {"minLength", "maxLength", "pattern", "format"} & set(node):
            return "string"
        return ["null", "boolean", "integer", "number", "string", "array", "object"]

    def _typed(self, node: Mapping[str, Any], kind: str, depth: int) -> st.SearchStrategy[Any]:
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "integer":
            return self._integers(node)
        if kind == "number":
            return self._numbers(node)
        if kind == "string":
            return self._strings(node)
        if kind == "array":
            return self._arrays(node, depth)
        if kind == "object":
            return self._objects(node, depth)
        raise UnsupportedSchema(f"unknown type {kind!r}")

    @staticmethod
    def _bounds(node: Mapping[str, Any]) -> tuple[float | None, float | None, bool, bool]:
        low, high = node.get("minimum"), node.get("maximum")
        xlow, xhigh = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
        low_open = high_open = False
        if isinstance(xlow, bool):  # draft-04 style
            low_open = xlow
        elif isinstance(xlow, int | float) and (low is None or xlow >= low):
            low, low_open = xlow, True
        if isinstance(xhigh, bool):
            high_open = xhigh
        elif isinstance(xhigh, int | float) and (high is None or xhigh <= high):
            high, high_open = xhigh, True
        return low, high, low_open, high_open

    def _realistic(self, low: float | None, high: float | None
                   ) -> tuple[float | None, float | None]:
        """Close the open sides of a range within :attr:`magnitude` (unchanged when unset)."""
        span = self.magnitude
        if span is None:
            return low, high
        if low is None and high is None:
            return -span, span
        if low is None:
            assert high is not None
            return high - span, high
        if high is None:
            return low, low + span
        return low, high

    def _integers(self, node: Mapping[str, Any]) -> st.SearchStrategy[Any]:
        low, high, low_open, high_open = self._bounds(node)
        low, high = self._realistic(low, high)
        lo, hi = -_SAFE_INT, _SAFE_INT
        if low is not None:
            lo = math.floor(low) + 1 if low_open else math.ceil(low)
        if high is not None:
            hi = math.ceil(high) - 1 if high_open else math.floor(high)
        if lo > hi:
            raise UnsupportedSchema("no integer within the bounds")
        values = st.integers(lo, hi)
        step = node.get("multipleOf")
        if isinstance(step, int) and step > 0:
            values = st.integers(-(-lo // step), hi // step).map(lambda n: n * step)
        return values

    def _numbers(self, node: Mapping[str, Any]) -> st.SearchStrategy[Any]:
        if "multipleOf" in node:
            return self._integers(node)
        low, high, low_open, high_open = self._bounds(node)
        low, high = self._realistic(low, high)
        floats = st.floats(
            min_value=-1e9 if low is None else float(low),
            max_value=1e9 if high is None else float(high),
            exclude_min=low_open, exclude_max=high_open,
            allow_nan=False, allow_infinity=False,
        )
        try:
            return st.one_of(self._integers(node), floats)
        except UnsupportedSchema:  # no integer in range: floats only
            return floats

    def _strings(self, node: Mapping[str, Any]) -> st.SearchStrategy[Any]:
        if "pattern" in node:
            pattern = str(node["pattern"])
            size_ok = _length_check(node)
            return st.from_regex(pattern, fullmatch=True).filter(size_ok)
        low = int(node.get("minLength", 0))
        high = int(node.get("maxLength", max(low, 12)))
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            size_ok = _length_check(node)
            return _FORMATS[fmt].filter(size_ok)
        return _text(low, min(high, low + 16))

    def _arrays(self, node: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
        low = int(node.get("minItems", 0))
        high = int(node.get("maxItems", low + 3))
        if depth > self.max_depth:
            high = low
        high = min(high, low + 3)
        prefix = node.get("prefixItems")
        items = node.get("items", True)
        if isinstance(items, list):  # draft-07 tuple form
            prefix, items = items, node.get("additionalItems", True)
        element = self.build(items, depth)
        unique = node.get("uniqueItems") is True
        if prefix:
            head = st.tuples(*[self.build(p, depth) for p in prefix]).map(list)
            tail_low = max(0, low - len(prefix))
            tail = st.lists(element, min_size=tail_low, max_size=max(tail_low, high - len(
                prefix)))
            values: st.SearchStrategy[Any] = st.builds(lambda h, t: h + t, head, tail)
            if unique:
                values = values.filter(lambda v: len({_key(x) for x in v}) == len(v))
            return values
        if unique:
            return st.lists(element, min_size=low, max_size=high, unique_by=_key)
        return st.lists(element, min_size=low, max_size=high)

    def _objects(self, node: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
        properties: Mapping[str, Any] = node.get("properties", {})
        required = [name for name in node.get("required", []) if isinstance(name, str)]
        extra = node.get("additionalProperties", True)
        fixed = {name: self.build(properties.get(name, extra if extra is not False else True),
                                  depth) for name in required}
        optional: dict[str, st.SearchStrategy[Any]] = {}
        if depth <= self.max_depth:
            optional = {name: self.build(schema, depth) for name, schema in properties.items()
                        if name not in fixed}
        values: st.SearchStrategy[Any] = st.fixed_dictionaries(fixed, optional=optional)
        if not properties and extra is not False and depth <= self.max_depth:
            # A free-form map (``arguments``, ``JSONObject``, ``experimental``...).
            extras = st.dictionaries(
                st.sampled_from([k for k in _FREE_KEYS if k not in fixed]),
                self.build(extra, depth + 1), max_size=2,
            )
            values = st.builds(lambda base, more: {**more, **base}, values, extras)
        low = node.get("minProperties")
        high = node.get("maxProperties")
        if low is not None or high is not None:
            values = values.filter(lambda d: (low is None or len(d) >= low) and (
                high is None or len(d) <= high))
        return values


def _merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Both schemas at once, for the object-shaped merges ``allOf`` needs in practice."""
    out = dict(a)
    for key, value in b.items():
        if key == "properties" and key in out:
            props = dict(out[key])
            for name, schema in value.items():
                props[name] = _merge_property(props.get(name), schema)
            out[key] = props
        elif key == "required" and key in out:
            out[key] = list(dict.fromkeys([*out[key], *value]))
        elif key == "type" and key in out and out[key] != value:
            mine = out[key] if isinstance(out[key], list) else [out[key]]
            theirs = value if isinstance(value, list) else [value]
            common = [t for t in mine if t in theirs]
            if not common:
                raise UnsupportedSchema(f"allOf of types {mine} and {theirs}")
            out[key] = common if len(common) > 1 else common[0]
        else:
            out[key] = value
    return out


def _merge_property(a: Any, b: Any) -> Any:
    if a is None or a is True or a == {}:
        return b
    if b is True or b == {}:
        return a
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if "$ref" in a or "$ref" in b:
            return {"allOf": [a, b]}
        return _merge(a, b)
    return b


def _length_check(node: Mapping[str, Any]) -> Any:
    low = int(node.get("minLength", 0))
    high = node.get("maxLength")

    def ok(text: str) -> bool:
        return len(text) >= low and (high is None or len(text) <= int(high))

    return ok


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
